"""Start ``batchline serve`` in a subprocess on a free port and wait until ready.

``config`` is one argument or a list of them, as ``batchline serve`` takes
them (files or directories). ``wait_ready=False`` returns as soon as the
process runs; :meth:`ServerProcess.wait_ready` waits later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from tuning.server import free_port
from tuning.server import wait_ready as _wait_ready

__all__ = ["ROOT", "ServerProcess", "free_port"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ServerProcess:
    def __init__(
        self,
        config: str | Sequence[str],
        *,
        port: int | None = None,
        ready_timeout: float = 240.0,
        extra_args: tuple[str, ...] = (),
        env: dict | None = None,
        root: str = ROOT,
        wait_ready: bool = True,
    ):
        configs = [config] if isinstance(config, str) else list(config)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"batchline-serve-{self.port}.log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - the server writes to it until stop()
        # root: the checkout whose code serves (another revision's worktree, for a bench)
        full_env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            # loopback, as self.url says, whatever the configs' host (extra_args may still set one)
            [
                sys.executable,
                "-m",
                "serving.cli",
                "serve",
                *configs,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *extra_args,
            ],
            cwd=root,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=full_env,
        )
        if wait_ready:
            self.wait_ready(ready_timeout)

    def wait_ready(self, timeout: float = 240.0) -> None:
        """Until ``/health/ready`` answers 200; RuntimeError (with the log) if the server exits or times out."""
        why = _wait_ready(self.proc, self.url, timeout)
        if why is None:
            return
        log = self.log()
        self.stop()
        raise RuntimeError(f"server {why}:\n{log}")

    def log(self) -> str:
        self._log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-5000:]

    def terminate(self, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def run_batchline(
    *argv: str, env: dict[str, str] | None = None, unset: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    """The ``batchline`` console entry point (``serving.cli``) in a child process of this tree,
    ``unset`` removed from this environment and ``env`` added."""
    full_env = {k: v for k, v in os.environ.items() if k not in unset}
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "serving.cli", "--log-level", "WARNING", *argv],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
