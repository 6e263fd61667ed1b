"""``batchline serve`` on a bench config, in a subprocess on a free port."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bench.lib.script import BenchError


@contextmanager
def served(
    config_path: str,
    *,
    ready_timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    root: str | None = None,
) -> Iterator[Any]:
    """``batchline serve config_path`` on a free port; yields the ServerProcess.
    ``env``: extra environment variables for the server process; ``root``: the
    checkout whose code serves (default: this one)."""
    from tests.support.server_process import ROOT, ServerProcess

    try:
        server = ServerProcess(
            config_path,
            ready_timeout=ready_timeout,
            extra_args=("--host", "127.0.0.1"),
            env=dict(env or {}),
            root=root or ROOT,
        )
    except RuntimeError as exc:
        raise BenchError(f"server for {config_path} did not start: {exc}") from None
    try:
        yield server
    finally:
        stop_server(server)


def stop_server(server: Any, timeout: float = 30.0) -> None:
    """SIGTERM (drain), then kill if it does not exit in time."""
    try:
        if server.proc.poll() is None:
            server.terminate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        server.stop()
