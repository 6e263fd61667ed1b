"""What every route group is built from: one typed object, so a group's
dependencies are explicit and a test can hand it its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from serving.engine.decode_budget import DecodeBudget
from serving.http.handler_count import HandlerCount
from serving.http.limits import HttpLimits
from serving.http.served_repository import ServedRepository


@dataclass(frozen=True)
class RouteContext:
    repository: ServedRepository  # the pipelines; its config changes on reload, so groups read it per request
    metrics_text: Callable[[], bytes]  # what ``/metrics`` answers
    decode_budget: DecodeBudget  # bytes of decoded inputs held at once, server-wide
    handlers: HandlerCount  # prediction handlers running now (drain waits for zero)
    limits: HttpLimits | None = None  # replaces every pipeline's own HTTP limits (tests)
