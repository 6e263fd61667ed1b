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

    try:
        with started_on(cpus):
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


@contextmanager
def served_together(
    config_paths: Mapping[str, str],
    *,
    ready_timeout: float = 300.0,
    cpus: Mapping[str, Sequence[int]] | None = None,
) -> Iterator[dict[str, Any]]:
    """``batchline serve`` on each config at once (their imports and model loads overlap),
    each on a free port; yields ``{key: ServerProcess}`` once every one is ready.
    ``cpus``: per key, the only CPUs that server may use (as in :func:`served`)."""
    from tests.support.server_process import ServerProcess

    servers: dict[str, Any] = {}
    try:
        for key, path in config_paths.items():
            with started_on((cpus or {}).get(key)):
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


@contextmanager
def started_on(cpus: Sequence[int] | None) -> Iterator[None]:
    """A process started inside the block runs on ``cpus`` only (None: as this one): a child
    inherits its parent's affinity at fork, so this process's is narrowed for the start only."""
    if cpus is None:
        yield
        return
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


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
