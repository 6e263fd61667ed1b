"""The RapidOCR contenders of bench/ocr_vs_peers.py: its Flask + waitress
server with a pool of instances (bench/peers/rapidocr_server.py) and its own
sequential loop (bench/peers/rapidocr_loop.py), both run by the RapidOCR
environment's python (bench/lib/rapidocr_venv.py); and the choice of the
server's pool layout by a short trial of each."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from bench.lib.paths import ROOT, cache_dir
from bench.lib.peer_process import PeerProcess
from bench.lib.script import BenchError

SERVER = os.path.join(ROOT, "bench", "peers", "rapidocr_server.py")
LOOP = os.path.join(ROOT, "bench", "peers", "rapidocr_loop.py")


@dataclass(frozen=True)
class Layout:
    """``pool`` RapidOCR instances of ``threads`` math threads each (OpenVINO: ``pinned`` threads)."""

    pool: int
    threads: int
    pinned: bool = True

    def __str__(self) -> str:
        return f"{self.pool}x{self.threads}" + ("" if self.pinned else "-unpinned")

    def args(self) -> list[str]:
        return ["--pool", str(self.pool), "--threads", str(self.threads)] + ([] if self.pinned else ["--no-pinning"])


def parse_layouts(text: str) -> list[Layout]:
    """``"1x2,2x1,2x1-unpinned"`` -> layouts (pool x threads, optionally unpinned)."""
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        spec, _, flag = item.partition("-")
        pool, sep, threads = spec.partition("x")
        if not sep or not pool.isdigit() or not threads.isdigit() or int(pool) < 1 or int(threads) < 1:
            raise BenchError(f"a layout is POOLxTHREADS[-unpinned], e.g. 2x1, got {item!r}")
        if flag not in ("", "unpinned"):
            raise BenchError(f"unknown layout flag {flag!r} in {item!r} (only -unpinned)")
        out.append(Layout(int(pool), int(threads), pinned=flag != "unpinned"))
    if not out:
        raise BenchError(f"no layout in {text!r}")
    return out


@dataclass(frozen=True)
class RapidSpec:
    """One RapidOCR configuration: engine (openvino | onnxruntime) and precision (default | fp32)."""

    engine: str
    precision: str = "default"

    @property
    def key(self) -> str:
        return f"rapidocr_{'ov' if self.engine == 'openvino' else 'ort'}_{self.precision}"

    @property
    def title(self) -> str:
        return f"RapidOCR-{'OpenVINO' if self.engine == 'openvino' else 'onnxruntime'} {self.precision}"

    def args(self) -> list[str]:
        return ["--engine", self.engine, "--precision", self.precision]


def rapidocr_server(python: str, spec: RapidSpec, layout: Layout, det_resize: str = "paddleocr") -> PeerProcess:
    """bench/peers/rapidocr_server.py started (not yet ready) in the RapidOCR environment."""
    if spec.engine != "openvino" and not layout.pinned:
        raise BenchError(f"layout {layout}: pinning is an OpenVINO setting")
    cmd = [python, SERVER, *spec.args(), *layout.args(), "--det-resize", det_resize]
    return PeerProcess(cmd, label=f"{spec.key}-{layout}")


class RapidLoop:
    """bench/peers/rapidocr_loop.py kept running across rounds: loaded and warmed once."""

    def __init__(self, python: str, spec: RapidSpec, pages_dir: str, threads: int, det_resize: str = "paddleocr"):
        self.spec = spec
        self.log_path = os.path.join(cache_dir("logs"), f"{spec.key}-loop-{os.getpid()}.log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (its stderr, until close())
        cmd = [python, LOOP, *spec.args(), "--threads", str(threads), "--det-resize", det_resize, "--pages", pages_dir]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1
        )
        self.info: dict = {}
        self.answers: list = []

    def wait_ready(self) -> None:
        """Until it has loaded and read every page once; keeps its info and those answers."""
        ready = self._read()
        self.info, self.answers = ready["info"], ready["answers"]

    def run(self, seconds: float, min_calls: int = 1) -> dict:
        """Its loop for ``seconds`` (at least ``min_calls`` pages): items, seconds, items_per_s, latencies_s."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"run": seconds, "min_calls": min_calls}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise BenchError(f"{self.spec.key} loop exited with {self.proc.returncode}; log {self.log_path}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def choose_layout(
    python: str,
    spec: RapidSpec,
    layouts: Sequence[Layout],
    payloads: Sequence[dict],
    clients: int,
    seconds: float,
    det_resize: str = "paddleocr",
) -> tuple[Layout, dict[str, float]]:
    """The layout whose server serves the most images/s in a short closed loop
    (``seconds``, after half as long unmeasured); one layout: no trial."""
    if len(layouts) == 1:
        return layouts[0], {}
    from bench.lib.measure import closed_loop

    rates: dict[str, float] = {}
    for layout in layouts:
        if spec.engine != "openvino" and not layout.pinned:
            continue
        server = rapidocr_server(python, spec, layout, det_resize)
        try:
            server.wait_ready()
            r = closed_loop(server.url, "ocr", payloads, clients, seconds, warmup_s=seconds / 2, metrics=False)
            rates[str(layout)] = r["qps"]
        finally:
            server.stop()
        print(f"layout trial {spec.title} server {layout}: {rates[str(layout)]:.2f} images/s", flush=True)
    best = max(rates, key=lambda k: rates[k])
    return next(x for x in layouts if str(x) == best), rates
