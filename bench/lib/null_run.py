"""Running one null-op server and measuring it: start its command in a
session of its own, wait until it answers the null request rightly, lone
requests, then the closed loop with the server tree's CPU counted over the
window, then stop it and whatever it started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

from bench.lib.http_load import HttpError, HttpRequest, closed_loop, latency_summary_ms, lone_latencies, probe
from bench.lib.measure import cpu_used, tree_cpu_seconds
from bench.lib.paths import ROOT, cache_dir
from bench.lib.script import BenchError, first_line
from serving.runners.process_memory import process_tree

HOST = "127.0.0.1"


class Served:
    """``argv`` running from the repo root (or ``root``: another revision's checkout),
    output to a log under the bench cache."""

    def __init__(self, argv: Sequence[str], label: str, port: int, root: str = ROOT):
        self.label, self.port = label, port
        self.log_path = os.path.join(cache_dir("logs"), f"null-{label}-{port}.log")
        env = dict(os.environ, PYTHONPATH=root, PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as log:
            # its own session: stopping it never signals this process's group
            self.proc = subprocess.Popen(
                list(argv), cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def wait_ready(self, request: HttpRequest, timeout: float) -> None:
        """Until the null request is answered 200 with the right length."""
        end = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    hint = failure_hint(f.read())
                raise BenchError(f"{self.label} exited with {self.proc.returncode}{hint}; log {self.log_path}")
            try:
                status, body = probe(HOST, self.port, request)
                if status == 200 and request.check(body):
                    return
                last = f"HTTP {status}: {body[:200]!r}"
            except (OSError, HttpError) as exc:
                last = repr(exc)
            time.sleep(0.5)
        raise BenchError(f"{self.label} not answering after {timeout:.0f}s ({last}); log {self.log_path}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL to every process of its tree still alive (by id)."""
        tree = process_tree(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue  # gone already
        if self.proc.poll() is None:
            self.proc.wait(10)


_ERROR = re.compile(r"([A-Z][a-z]\w*Error): [^\\\n]{0,160}")


def failure_hint(log_text: str) -> str:
    """``: <the error>`` from a failed server's log: its first error other than a
    timeout (a timeout is mostly what follows the cause), else its first; "" if none."""
    found = list(_ERROR.finditer(log_text))
    if not found:
        return ""
    cause = next((m for m in found if m.group(1) != "TimeoutError"), found[0])
    return f": {cause.group(0).strip()}"


def cpu_pct(seconds: float, wall_s: float) -> float:
    """CPU seconds over a wall-clock window, in percent of one core (200% = two cores busy)."""
    return 100.0 * seconds / wall_s if wall_s > 0 else float("nan")


def measure(
    served: Served, request: HttpRequest, *, clients: int, duration_s: float, warmup_s: float, lone: int
) -> dict:
    """Lone requests, then the closed loop; the server tree's and this client's CPU over the window."""
    lone_s = lone_latencies(HOST, served.port, request, lone)
    marks: dict[str, tuple[dict[int, float], float]] = {}

    def sample() -> None:
        # from the window's start to its end, read by a side thread while the loop runs
        time.sleep(warmup_s)
        marks["start"] = (tree_cpu_seconds([served.proc.pid]), time.process_time())
        time.sleep(duration_s)
        marks["end"] = (tree_cpu_seconds([served.proc.pid]), time.process_time())

    sampler = threading.Thread(target=sample, name="cpu-sampler", daemon=True)
    began = time.monotonic()
    sampler.start()
    result = closed_loop(HOST, served.port, request, clients, duration_s, warmup_s)
    sampler.join(max(0.0, warmup_s + duration_s + 5 - (time.monotonic() - began)))
    if "end" not in marks:
        raise BenchError(f"{served.label}: the CPU sampler did not finish")
    server_s = cpu_used(marks["start"][0], marks["end"][0])
    client_s = marks["end"][1] - marks["start"][1]
    lone_ms = latency_summary_ms(lone_s)
    return {
        **result.to_dict(),
        "lone_p50_ms": lone_ms["p50"],
        "lone_p99_ms": lone_ms["p99"],
        "lone_n": lone_ms["n"],
        "server_cpu_s": round(server_s, 3),
        "server_cpu_pct": round(cpu_pct(server_s, duration_s), 1),
        "server_cpu_per_request_ms": round(1000 * server_s / result.ok, 4) if result.ok else None,
        "client_cpu_pct": round(cpu_pct(client_s, duration_s), 1),
        "server_processes": len(marks["end"][0]),
    }


def measured_row(served: Served, request: HttpRequest, args: Any, ready_timeout: float) -> dict:
    """:func:`measure` of a started server once it answers (``args``: a script's ``--clients``,
    ``--duration``, ``--warmup``, ``--lone``), or ``{"failed": why}``; the server is stopped after."""
    try:
        served.wait_ready(request, ready_timeout)
        row = {"log": served.log_path}
        row.update(
            measure(
                served,
                request,
                clients=args.clients,
                duration_s=args.duration,
                warmup_s=args.warmup,
                lone=args.lone,
            )
        )
        return row
    except BenchError as exc:
        return {"failed": first_line(exc)}
    finally:
        served.stop()
