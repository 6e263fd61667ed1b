"""What the doors need of the pipelines served: the engine's
:class:`~serving.batching.live_pipelines.PipelineRepository`, or a front process's
:class:`~serving.http.front_processes.remote_pipelines.RemoteRepository` standing in for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from serving.batching.live_pipelines import ReloadReport
from serving.batching.request import RequestState
from serving.config.file_set import RepositoryConfig
from serving.config.schema import ServingConfig


class ServedPipeline(Protocol):
    """What the routes read of one pipeline version: all of it from its config."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def config(self) -> ServingConfig: ...
    def input_kind(self) -> str | None: ...
    def time_limit_s(self, timeout_ms: int | None = None) -> float: ...
    def op_table(self) -> list[dict[str, Any]]: ...


class ServedGeneration(Protocol):
    @property
    def number(self) -> int: ...


class ServedMetrics(Protocol):
    def render(self) -> bytes: ...


class ServedRepository(Protocol):
    @property
    def config(self) -> RepositoryConfig: ...
    @property
    def generation(self) -> ServedGeneration: ...
    @property
    def ready(self) -> bool: ...
    @property
    def live(self) -> bool: ...
    @property
    def metrics(self) -> ServedMetrics: ...
    def pipeline(self, name: str, version: int | None = None) -> ServedPipeline: ...
    def listing(self) -> dict[str, Any]: ...
    def reload(self) -> ReloadReport: ...
    def on_reload(self, callback: Callable[[], None]) -> None: ...
    def precheck(
        self,
        name: str,
        count: int,
        *,
        version: int | None = None,
        key: str | None = None,
        timeout_ms: int | None = None,
        logid: Any = None,
    ) -> None: ...
    def submit(
        self,
        name: str,
        values: Sequence[Any],
        *,
        version: int | None = None,
        key: str | None = None,
        priority: int = 0,
        timeout_ms: int | None = None,
        logid: Any = None,
        protocol: str = "http",
    ) -> Sequence[RequestState]: ...
