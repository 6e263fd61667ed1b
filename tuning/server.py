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


def wait_ready(proc: subprocess.Popen, url: str, timeout: float) -> str | None:
    """None once ``url``'s ``/health/ready`` answers 200; else why not: the
    process exited (``exited with N``) or ``timeout`` s passed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return f"exited with {proc.returncode}"
        try:
            if requests.get(url + "/health/ready", timeout=1).status_code == 200:
                return None
        except requests.RequestException:
            pass
        time.sleep(0.2)
    return f"not ready after {timeout:.0f}s"


class ServerFailed(RuntimeError):
    """A config's server did not become ready: the reason and the tail of its log."""


class Server:
    """One server on ``config`` (a file path) until :meth:`stop`; :class:`ServerFailed` when it does not come up."""

    def __init__(self, config: str, *, ready_timeout: float = 600.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="batchline-tune-", suffix=".log", delete=False)  # noqa: SIM115 - open while the server runs
        self.proc = subprocess.Popen(
            # on loopback whatever the config's host: the bench polls 127.0.0.1 and needs no token there
            [sys.executable, "-m", "serving.cli", "serve", config, "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        why = wait_ready(self.proc, self.url, ready_timeout)
        if why is not None:
            tail = self.log()[-2000:]
            self.stop()
            raise ServerFailed(f"the server on {config} {why}:\n{tail}")

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
