"""``batchline serve`` on a bench config, in a subprocess on a free port."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
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
    cpus: Sequence[int] | None = None,
) -> Iterator[Any]:
    """``batchline serve config_path`` (a file or a repository directory) on a free
    port; yields the ServerProcess. ``env``: extra environment variables for the
    server process; ``root``: the checkout whose code serves (default: this one);
    ``cpus``: the only CPUs the server and its predictor processes may use (as
    ``taskset`` would; the server plans its pinning inside them)."""
    from tests.support.server_process import ROOT, ServerProcess

    mine = os.sched_getaffinity(0)
    try:
        if cpus is not None:
            # the child inherits this process's affinity at fork: narrow it for the start only
            os.sched_setaffinity(0, set(cpus))
        server = ServerProcess(
            config_path,
            ready_timeout=ready_timeout,
            extra_args=("--host", "127.0.0.1"),
            env=dict(env or {}),
            root=root or ROOT,
        )
    except RuntimeError as exc:
        raise BenchError(f"server for {config_path} did not start: {exc}") from None
    finally:
        os.sched_setaffinity(0, mine)
    try:
        yield server
    finally:
        stop_server(server)


@contextmanager
def served_together(config_paths: Mapping[str, str], *, ready_timeout: float = 300.0) -> Iterator[dict[str, Any]]:
    """``batchline serve`` on each config at once (their imports and model loads overlap),
    each on a free port; yields ``{key: ServerProcess}`` once every one is ready."""
    from tests.support.server_process import ServerProcess

    servers: dict[str, Any] = {}
    try:
        for key, path in config_paths.items():
            servers[key] = ServerProcess(path, extra_args=("--host", "127.0.0.1"), wait_ready=False)
        for key, server in servers.items():
            try:
                server.wait_ready(ready_timeout)
            except RuntimeError as exc:
                raise BenchError(f"server for {config_paths[key]} did not start: {exc}") from None
        yield servers
    finally:
        for server in servers.values():
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


def wait_ok(url: str, timeout_s: float = 300.0) -> None:
    """Poll ``url`` (e.g. a Ray application's ``/health/ready``, which answers 503 until
    every replica runs) until it answers 200; BenchError after ``timeout_s``."""
    import time

    import requests

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            if requests.get(url, timeout=30).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise BenchError(f"{url} did not answer 200 within {timeout_s:.0f} s")
