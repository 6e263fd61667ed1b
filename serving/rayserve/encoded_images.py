"""On Ray, a request's images travel to the op replicas as their files, not their pixels.

The single-process server decodes a request's images in its prediction route,
after admission and every size limit. On Ray the decoded page would then cross
to the first op's replica as an array many times the file's size (the largest
sample page: 1.2 MB of pixels against 14 KB of PNG), through Ray's object store.
So the ingress's request core takes the same steps as the server's, in the same
order and with the same statuses (admission 503, the header's pixels and the
request's totals 413, an unreadable header 400, the decode budget 503), and
stops short of decoding: its ``values`` (:func:`carried`) hand each image to the
pipeline as its checked :class:`PendingInput` (file bytes and header). The
decode budget still counts the pixels: the replicas hold them while the request runs.
The op replica decodes it (:func:`decoded`) with the server's own call, so its
op sees the same array and gives the same answer. A file whose header passes
but whose pixels do not decode is refused by the replica, with the server's
status and message (``input N: cannot decode image ...``).
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
