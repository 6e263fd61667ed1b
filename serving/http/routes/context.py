"""What every route group is built from: one typed object, so a group's
dependencies are explicit and a test can hand it its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from serving.service.core import RequestCore
from serving.service.served_pipelines import ServedRepository


@dataclass(frozen=True)
class RouteContext:
    core: RequestCore  # every prediction's one pass (serving.service.core)
    metrics_text: Callable[[], bytes]  # what ``/metrics`` answers

    @property
    def repository(self) -> ServedRepository:
        """The pipelines; its config changes on reload, so groups read it per request."""
        return self.core.repository
