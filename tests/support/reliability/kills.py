"""Predictor processes SIGKILLed under load (issue 15's "kills under load"):
full OCR served with det and rec in ``instance_mode: process``, closed-loop
clients, and one predictor process killed at each of several moments,
alternating det and rec (processes are named ``bl-<op>``, so ``/proc`` tells
them apart). Used by ``tests/e2e/test_kills_under_load.py`` and
``bench/kills_under_load.py``."""

from __future__ import annotations

import base64
import glob
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests
import yaml

from serving.runners.process_memory import children
from tests.support.server_process import ROOT, ServerProcess


def process_config(path: str, instances: int = 2) -> str:
    """configs/ocr.yml with det and rec as ``instances`` predictor processes of 1 thread each."""
    with open(os.path.join(ROOT, "configs", "ocr.yml"), encoding="utf-8") as f:
        data = yaml.safe_load(f)
    for op in data["op"].values():
        op["local_service_conf"].update(instance_mode="process", instance_num=instances, thread_num=1)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f)
    return path


def predictor_pids(server_pid: int, op: str) -> list[int]:
    """The server's predictor processes of ``op`` (named ``bl-<op>``)."""
    found = []
    for pid in children(server_pid):
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
                if f.read().strip() == f"bl-{op}":
                    found.append(pid)
        except OSError:
            pass
    return sorted(found)


def restarts(url: str, name: str = "batchline_op_instance_restarts_total") -> dict[str, float]:
    """A per-op counter from the server's /metrics, by default the restarts of predictor
    processes (``batchline_op_instance_recycles_total``: the memory guard's replacements)."""
    from client.stats import MetricsSnapshot

    snap = MetricsSnapshot.from_text(requests.get(url + "/metrics", timeout=10).text)
    return {op: snap.value(name, op=op) for op in snap.label_values(name, "op")}


@dataclass
class KillRun:
    outcomes: list[tuple[Any, float]] = field(default_factory=list)  # (status or error name, seconds)
    kills: list[tuple[float, str, int]] = field(default_factory=list)  # (at s, op, pid)
    readiness: list[tuple[float, int]] = field(default_factory=list)  # (at s, /health/ready status)
    ready_after_last_kill_s: float | None = None
    restarts: dict[str, float] = field(default_factory=dict)
    exit_code: int | None = None
    deadline_s: float = 30.0

    @property
    def ok_share(self) -> float:
        return sum(1 for s, _ in self.outcomes if s == 200) / max(1, len(self.outcomes))

    def statuses(self) -> dict[Any, int]:
        out: dict[Any, int] = {}
        for s, _ in self.outcomes:
            out[s] = out.get(s, 0) + 1
        return out


def kills_under_load(
    workdir: str, *, clients: int = 8, duration_s: float = 40.0, kills: int = 4, first_kill_s: float = 5.0
) -> KillRun:
    config = process_config(os.path.join(workdir, "ocr_processes.yml"))
    pages = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "ocr", "sample", "*.png"))):
        with open(path, "rb") as f:
            pages.append(base64.b64encode(f.read()).decode())
    run = KillRun()
    server = ServerProcess(config, ready_timeout=300)
    try:
        stop = threading.Event()
        lock = threading.Lock()

        def client(i: int) -> None:
            n = i
            while not stop.is_set():
                body = {"key": ["image"], "value": [pages[n % len(pages)]]}
                began = time.monotonic()
                try:
                    status: Any = requests.post(
                        server.url + "/ocr/prediction", json=body, timeout=run.deadline_s + 30
                    ).status_code
                except requests.RequestException as exc:
                    status = type(exc).__name__
                with lock:
                    run.outcomes.append((status, time.monotonic() - began))
                n += clients

        def watch_ready() -> None:
            while not stop.is_set():
                try:
                    code = requests.get(server.url + "/health/ready", timeout=2).status_code
                except requests.RequestException:
                    code = 0
                with lock:
                    run.readiness.append((time.monotonic() - start, code))
                time.sleep(0.2)

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
        threads.append(threading.Thread(target=watch_ready, daemon=True))
        start = time.monotonic()
        for t in threads:
            t.start()
        interval = (duration_s - first_kill_s - 5) / max(1, kills - 1)
        for k in range(kills):
            time.sleep(max(0.0, start + first_kill_s + k * interval - time.monotonic()))
            op = ("det", "rec")[k % 2]
            pids = predictor_pids(server.proc.pid, op)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                run.kills.append((time.monotonic() - start, op, pids[0]))
        last_kill = time.monotonic() - start
        time.sleep(max(0.0, start + duration_s - time.monotonic()))
        stop.set()
        for t in threads:
            t.join(run.deadline_s + 40)
        after = [at for at, code in run.readiness if at >= last_kill and code == 200]
        run.ready_after_last_kill_s = after[0] - last_kill if after else None
        run.restarts = restarts(server.url)
        run.exit_code = server.terminate()
    finally:
        server.stop()
    return run
