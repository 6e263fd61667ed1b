"""What crosses a ``DeploymentHandle``: one request's inputs for one op, and the op's answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from serving.batching.request import OpTiming
from serving.errors import ServingError, error_for_status


@dataclass
class OpCall:
    inputs: dict[str, Any]  # upstream op (or "input") -> its output for this request
    timeout_s: float  # time left before the request's deadline (clocks differ between machines)
    priority: int = 0
    background: bool = False
    logid: Any = None


@dataclass
class OpReply:
    output: Any = None
    # a failure: (HTTP status, message, Retry-After seconds or None)
    error: tuple[int, str, float | None] | None = None
    timeline: list[OpTiming] = field(default_factory=list)

    @classmethod
    def failed(cls, error: ServingError, timeline: list[OpTiming] | None = None) -> OpReply:
        return cls(error=(error.status, error.message, error.retry_after), timeline=timeline or [])

    def raise_error(self) -> None:
        if self.error is None:
            return
        status, message, retry_after = self.error
        err = error_for_status(status, message)
        err.retry_after = retry_after
        raise err
