"""The front processes of a server with ``http.front_workers: N``: each accepts on the
server's port (:mod:`serving.http.shared_port`), reads, authenticates, parses, decodes and
admits requests, and hands their values to the engine's :class:`FrontHub`. A front that dies
is started again (its requests in flight fail, and the engine stops computing them)."""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time

from serving.batching.live_pipelines import PipelineRepository
from serving.http.early_refusals import FrontGate
from serving.http.front_processes.hub import FrontHub
from serving.runners.process_supervisor import exit_cause

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0  # a front's start: Python, the app's imports, listen, link
RESPAWN_DELAY_S = 1.0  # a crash loop logs once a second
DRAIN_TIMEOUT_S = 25.0  # a front's own drain takes at most about 20 s (handlers, flush, close)


class FrontsFailed(RuntimeError):
    """The front processes could not all start."""


class FrontWorkers:
    def __init__(self, repository: PipelineRepository, host: str, port: int, count: int, gate: FrontGate):
        self._listen = ["--host", host, "--port", str(port)]  # each front listens there (serving.http.shared_port)
        self.count = count
        self._authkey = secrets.token_bytes(32)
        # an abstract Unix socket (Linux): no file to clean up; the key keeps other processes out
        self._address = f"batchline-front-{os.getpid()}-{secrets.token_hex(6)}"
        self.hub = FrontHub(
            repository,
            "\0" + self._address,
            self._authkey,
            count=count,
            auth_token=gate.auth_token,
            admin_token=gate.admin_token,
        )
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the fronts; returns once each listens (a front links to the engine only after
        it does), so the port refuses nobody from then on, as a one-process server's."""
        self.hub.start()
        with self._lock:
            self._procs = [self._spawn(i) for i in range(self.count)]
        if not self._wait_linked(timeout):
            self.drain()
            raise FrontsFailed(
                f"the {self.count} front processes did not all start (one exited, or {timeout:.0f} s passed; "
                "the log says why)"
            )
        threading.Thread(target=self._watch, name="front-watch", daemon=True).start()

    def _wait_linked(self, timeout: float) -> bool:
        """Whether every front linked within ``timeout`` s; False at once if one exited first."""
        end = time.monotonic() + timeout
        while not self.hub.wait_linked(self.count, min(0.2, max(0.0, end - time.monotonic()))):
            with self._lock:
                exited = any(p.poll() is not None for p in self._procs)
            if exited or time.monotonic() >= end:
                return False
        return True

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._procs]

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "serving.http.front_processes.process",
            "--address",
            self._address,
            *self._listen,
        ]
        level = logging.getLevelName(log.getEffectiveLevel())
        command += ["--index", str(index), "--log-level", level]
        proc = subprocess.Popen(command, stdin=subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write(self._authkey.hex().encode() + b"\n")
        proc.stdin.close()
        return proc

    def _watch(self) -> None:
        while not self._stopping.wait(0.2):
            with self._lock:
                dead = [(i, p) for i, p in enumerate(self._procs) if p.poll() is not None]
            for index, proc in dead:
                if self._stopping.wait(RESPAWN_DELAY_S):
                    return
                cause = exit_cause(proc.returncode)
                log.error("front process %d (pid %d) %s; starting it again", index, proc.pid, cause)
                with self._lock:
                    self._procs[index] = self._spawn(index)

    def drain(self) -> None:
        """Every front answers what it holds and exits (SIGTERM); one that does not within the
        timeout is killed. Then the link closes."""
        self._stopping.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.error("front process %d did not drain in %.0f s; killing it", proc.pid, DRAIN_TIMEOUT_S)
                proc.kill()
                proc.wait()
        self.hub.close()
