"""The real server in the test process: :class:`serving.server.Server`
(waitress + the Flask app + a started Pipeline) on a free port of 127.0.0.1,
run by a background thread.

    with LiveApp(text_config()) as live:
        PipelineClient(live.url).predict("ernie", text="good")

The thread runs ``Server.run()``, the code ``batchline serve`` runs: listen,
start (and warm) the pipeline, wait, then drain on :meth:`LiveApp.close`. So
whatever a client sees here is what a real server answers; only the process
boundary is missing (``tests/support/server_process.py`` has that), and in
exchange a test can reach into the pipeline, e.g. to release an op that holds
a batch (``live.op("cls").release()``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from serving.batching.live_pipelines import PipelineRepository
from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.config.file_set import RepositoryConfig
from serving.config.schema import ServingConfig
from serving.op import Op
from serving.runners.gpus import Nvml
from serving.server import Server


class LiveApp:
    """Serve ``config`` (a config dict, parsed with ``parse_config``, a
    ``ServingConfig``, or a ``RepositoryConfig`` of several) until :meth:`close`.

    The constructor returns once the socket listens and, with ``wait_ready``
    (default), once the pipeline is ready; with ``wait_ready=False`` it may
    not be yet (call :meth:`wait_ready`). ``nvml``: a fake NVML module for the
    GPU metrics (``tests/support/fake_nvml.py``; default: pynvml where installed)."""

    def __init__(
        self,
        config: dict[str, Any] | ServingConfig | RepositoryConfig,
        *,
        wait_ready: bool = True,
        warmup: bool = True,
        timeout: float = 60.0,
        front_workers: int | None = None,
        nvml: Nvml | None = None,
    ):
        if isinstance(config, dict):
            config = parse_config(config)
        self.server = Server(config, host="127.0.0.1", port=0, warmup=warmup, front_workers=front_workers, nvml=nvml)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-app", daemon=True)
        self._thread.start()
        try:
            self._wait(lambda: self.server.port != 0, timeout, "listening")
            if wait_ready:
                self.wait_ready(timeout)
        except BaseException:
            self.server.stop()
            raise

    def _run(self) -> None:
        try:
            self.server.run()
        except BaseException as exc:  # noqa: BLE001 - reported by _wait / close
            self._error = exc

    def _wait(self, condition, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not condition():
            if self._error is not None:
                raise RuntimeError(f"server failed before {what}: {self._error!r}") from self._error
            if not self._thread.is_alive():
                raise RuntimeError(f"server thread ended before {what}")
            if time.monotonic() > end:
                raise TimeoutError(f"server not {what} after {timeout}s")
            time.sleep(0.01)

    def wait_ready(self, timeout: float = 60.0) -> None:
        self._wait(lambda: self.repository.ready, timeout, "ready")

    @property
    def repository(self) -> PipelineRepository:
        return self.server.repository

    @property
    def pipeline(self) -> Pipeline:
        """The first pipeline's default version (the only one for a single config)."""
        return self.server.pipeline

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def rpc_address(self) -> str:
        """``HOST:PORT`` of its gRPC front (a config with ``rpc_port``)."""
        return f"{self.server.host}:{self.server.rpc_port}"

    def op(self, name: str) -> Op:
        """The live op object of op ``name``."""
        return self.pipeline.stages[name].op

    def release_held(self) -> None:
        """Let every op of every served pipeline that holds batches (the fakes' ``HOLD``) go on."""
        for pipeline in self.repository.generation.pipelines.values():
            for stage in pipeline.stages.values():
                release = getattr(stage.op, "release", None)
                if release is not None:
                    release()

    def close(self, timeout: float = 60.0) -> None:
        """Stop as SIGTERM would (refuse new requests, drain, stop) and wait."""
        self.server.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"server did not stop within {timeout}s")
        if self._error is not None:
            raise RuntimeError(f"server failed: {self._error!r}") from self._error

    def __enter__(self) -> LiveApp:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
