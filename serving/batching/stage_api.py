"""What a pipeline needs of an op stage: the seam between the DAG's wiring and
where an op runs (:class:`serving.batching.stage.OpStage` in this process, or
the Ray backend's remote stage)."""

from __future__ import annotations

from typing import Any, Protocol

from serving.batching.request import RequestState
from serving.op import Op


class Stage(Protocol):
    name: str
    # the op object (for a remote stage: not loaded; its pure hooks, e.g. ``agree``, still work)
    op: Op

    def accept(self, source: str, request: RequestState, output: Any) -> None:
        """One input of a request (``source``: the upstream op, or "input"); the output goes to ``request.owner``."""

    @property
    def healthy(self) -> bool:
        """Whether the stage can take work now (``/health/ready`` is 503 while one cannot)."""

    @property
    def broken(self) -> bool:
        """Whether the stage will never take work again (``/health/live`` is 503 while one is)."""
