"""On Ray, a request's images travel to the op replicas as their files, not their pixels.

The ingress takes the server's steps and statuses up to decoding (:func:`carried`);
the op replica decodes with the server's own call (:func:`decoded`), so answers match.
Why: docs/DESIGN_NOTES.md, "Images travel as their files".
"""

from __future__ import annotations

from typing import Any

from serving.service.decode import DecodePlan, PendingInput


def carried(plan: DecodePlan) -> list[Any]:
    """A checked request's values as they go to the pipeline: images undecoded, texts as they are."""
    return [p if p.header is not None else p.value for p in plan.inputs]


def decoded(value: Any) -> Any:
    """A request value as the op takes it: an image that travelled undecoded is decoded now."""
    return value.decode() if isinstance(value, PendingInput) else value
