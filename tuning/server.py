"""A ``batchline serve`` process for the verification bench: started on a
free port, ready when ``/health/ready`` answers 200, stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server on ``config`` (a file path) until :meth:`stop`."""

    def __init__(self, config: str, *, ready_timeout: float = 600.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="batchline-tune-", suffix=".log", delete=False)  # noqa: SIM115 - open while the server runs
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "serving.cli", "serve", config, "--port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        self._wait_ready(ready_timeout)

    def _wait_ready(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server on the config exited with {self.proc.returncode}:\n{self.log()[-2000:]}"
                )
            try:
                if requests.get(self.url + "/health/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the server was not ready within {timeout:.0f}s")

    def log(self) -> str:
        with open(self._log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        os.unlink(self._log.name)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
