"""A peer server (bench/peers/*.py) in a subprocess on a free port, waited on
until ``/health/ready`` answers; its output goes to a log under the bench cache."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence

from bench.lib.paths import ROOT, cache_dir
from bench.lib.script import BenchError


class PeerProcess:
    """``command`` plus ``--port <free port>``, started at once; :meth:`wait_ready`, :meth:`stop`."""

    def __init__(self, command: Sequence[str], label: str = "peer", ready_timeout: float = 300.0):
        from tests.support.server_process import free_port

        self.label = label
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(cache_dir("logs"), f"{label}-{self.port}.log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (the peer writes to it until stop() closes it)
        cmd = [*command, "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        self.ready_timeout = ready_timeout

    def wait_ready(self) -> None:
        import requests

        end = time.monotonic() + self.ready_timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.label} exited with {self.proc.returncode}; log {self.log_path}")
            try:
                if requests.get(self.url + "/health/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise BenchError(f"{self.label} not ready after {self.ready_timeout}s; log {self.log_path}")

    def get_json(self, path: str) -> dict:
        import requests

        return requests.get(self.url + path, timeout=10).json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
