"""Shared helpers for bench/fuzz.py, bench/overload.py and bench/soak.py:
start a server (a fake-op image config or a real one), sample its RSS, send a
known-good request, summarise latencies.

Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import requests  # noqa: E402

from client.stats import percentile  # noqa: E402
from tests.support.image_fakes import encode_png, expected_answer, image_config, make_image  # noqa: E402
from tests.support.server_process import ServerProcess  # noqa: E402

FAKE = "fake"  # --config value meaning: write and use a fake-op image config


# ---------------------------------------------------------------------------
# servers
# ---------------------------------------------------------------------------
def fake_config_file(**kwargs: Any) -> str:
    """Write an ImageStatsOp config to a temp file; return its path."""
    fd, path = tempfile.mkstemp(prefix="batchline-fake-", suffix=".yml")
    with os.fdopen(fd, "w") as f:
        f.write(image_config(**kwargs))
    return path


def start_server(
    config: str, *, ready_timeout: float = 300.0, env: dict | None = None, **fake_kwargs: Any
) -> ServerProcess:
    """``config`` is a path, or :data:`FAKE` for a fake-op image config built from ``fake_kwargs``."""
    path = fake_config_file(**fake_kwargs) if config == FAKE else config
    return ServerProcess(path, ready_timeout=ready_timeout, env=env)


@dataclass
class Target:
    """The server a load bench drives: ``url``, its ``pid`` (None if external),
    pipeline ``name``, a valid ``image`` and the fake-op settings used."""

    url: str
    pid: int | None
    name: str
    image: bytes
    fake: dict
    started: bool

    def capacity_concurrency(self, config: str) -> int:
        """Closed-loop clients that saturate the server when measuring capacity."""
        return 2 * self.fake["max_batch_size"] * self.fake["instance_num"] if config == FAKE else 16


@contextmanager
def load_target(config: str, url: str | None, fake: dict, image_path: str | None) -> Iterator[Target]:
    """Use the server at ``url``, or start ``config`` (FAKE: a fake-op config with
    ``fake``'s settings) for the duration of the block."""
    server = None
    try:
        if not url:
            server = start_server(config, **fake)
            url = server.url
        name, _ = pipeline_info(url)
        image, _ = valid_image(image_path)
        yield Target(url, server.proc.pid if server else None, name, image, fake, server is not None)
    finally:
        if server is not None:
            server.stop()


def pipeline_info(url: str) -> tuple[str, str]:
    """(pipeline name, input kind) of the server at ``url`` (probes GET /{name}/config via a 404 message)."""
    r = requests.post(url + "/__probe__/prediction", data=b"{}", timeout=10)
    msg = r.json().get("err_msg", "")
    name = msg.rsplit("this server runs ", 1)[-1].strip("'\"") if "this server runs" in msg else "ocr"
    kind = requests.get(f"{url}/{name}/config", timeout=10).json().get("input", "image")
    return name, kind


# ---------------------------------------------------------------------------
# RSS of a process and its children (predictor processes count too)
# ---------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _rss_one(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_rss_bytes(pid: int, *, reset: bool = False) -> int:
    """The process's RSS high-water mark (VmHWM); ``reset`` restarts it from
    the current RSS (via /proc/PID/clear_refs) after reading. 0 if unavailable."""
    peak = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
        if reset:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
    except OSError:
        pass
    return peak


def rss_bytes(pid: int, *, tree: bool = True) -> int:
    """Resident set size of ``pid`` (plus its descendants when ``tree``)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _rss_one(p)
        if tree:
            todo.extend(_children(p))
    return total


class RssSampler:
    """Samples ``rss_bytes(pid)`` every ``interval_s`` on a daemon thread."""

    def __init__(self, pid: int, interval_s: float = 1.0):
        self.pid = pid
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def _loop(self) -> None:
        t0 = time.monotonic()
        while not self._stop.is_set():
            self.samples.append((time.monotonic() - t0, rss_bytes(self.pid)))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)
        self.samples.append((self.samples[-1][0] + self.interval_s if self.samples else 0.0, rss_bytes(self.pid)))

    def peak(self) -> int:
        return max((s for _, s in self.samples), default=0)

    def at(self, t: float) -> int:
        """The first sample at or after ``t`` seconds."""
        for ts, s in self.samples:
            if ts >= t:
                return s
        return self.samples[-1][1] if self.samples else 0


def mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MB"


# ---------------------------------------------------------------------------
# a known-good request
# ---------------------------------------------------------------------------
def valid_image(path: str | None = None) -> tuple[bytes, Any]:
    """(PNG bytes, expected answer or None). With ``path``, that file and no expectation."""
    if path:
        with open(path, "rb") as f:
            return f.read(), None
    img = make_image(48, 32, seed=1)
    return encode_png(img), expected_answer(img)


def paddle_body(image: bytes, **extra: Any) -> bytes:
    import base64

    body = {"key": ["image"], "value": [base64.b64encode(image).decode()], "logid": 1}
    body.update(extra)
    return json.dumps(body).encode()


def check_alive(url: str, name: str, image: bytes, expected: Any, timeout: float = 30.0) -> list[str]:
    """Problems found (empty = healthy): /health/ready is 200 and a valid request answers correctly."""
    problems = []
    r = requests.get(url + "/health/ready", timeout=timeout)
    if r.status_code != 200:
        problems.append(f"/health/ready answered {r.status_code}")
    r = requests.post(f"{url}/{name}/prediction", data=paddle_body(image), timeout=timeout)
    if r.status_code != 200 or r.json().get("err_no") != 0:
        problems.append(f"valid request answered {r.status_code}: {r.text[:200]}")
    elif expected is not None and json.loads(r.json()["value"][0]) != expected:
        problems.append(f"valid request answered {r.json()['value'][0][:200]}, expected {expected}")
    return problems


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------
def pct_ms(values_s: Sequence[float], qs: Sequence[float] = (50, 90, 99)) -> dict[str, float]:
    out = {f"p{q:g}": round(percentile([v * 1000 for v in values_s], q), 1) for q in qs}
    out["max"] = round(max(values_s) * 1000, 1) if values_s else float("nan")
    out["n"] = len(values_s)
    return out


class Outcomes:
    """Thread-safe list of (status, latency_s, retry_after header or None)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[tuple[int, float, str | None]] = []

    def add(self, status: int, latency_s: float, retry_after: str | None) -> None:
        with self._lock:
            self.items.append((status, latency_s, retry_after))

    def by_status(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for status, _, _ in list(self.items):
            counts[status] = counts.get(status, 0) + 1
        return dict(sorted(counts.items()))

    def latencies(self, pred: Callable[[int], bool]) -> list[float]:
        return [lat for status, lat, _ in list(self.items) if pred(status)]


def measure_capacity(
    url: str, name: str, image: bytes, *, concurrency: int, duration_s: float, warmup_s: float = 1.0
) -> tuple[float, dict[str, float]]:
    """Closed-loop throughput (successful requests/s) and latency percentiles."""
    from client.loadgen import run_closed_loop

    body = paddle_body(image)

    def factory() -> requests.Session:
        return requests.Session()

    def one(session: requests.Session, i: int) -> None:
        r = session.post(f"{url}/{name}/prediction", data=body, timeout=60)
        if r.status_code != 200:
            from client.pipeline_client import PipelineError

            raise PipelineError(r.status_code, r.text[:200])

    result = run_closed_loop(
        factory, one, concurrency=concurrency, duration_s=duration_s, warmup_s=warmup_s, max_requests=100_000
    )
    return result.qps, result.latency_ms
