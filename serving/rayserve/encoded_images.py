"""On Ray, a request's images travel to the op replicas as their files, not their pixels.

The single-process server decodes a request's images in its prediction route,
after admission and every size limit. On Ray the decoded page would then cross
to the first op's replica as an array many times the file's size (the largest
sample page: 1.2 MB of pixels against 14 KB of PNG), through Ray's object store.
So the ingress's prediction routes (:class:`EncodedPredictionRoutes`) take the
same steps as the server's, in the same order and with the same statuses
(admission 503, the header's pixels and the request's totals 413, an unreadable
header 400, the decode budget 503), and stop short of decoding: each image goes
to the pipeline as its checked :class:`PendingInput` (file bytes and header).
The op replica decodes it (:func:`decoded`) with the server's own call, so its
op sees the same array and gives the same answer. A file whose header passes
but whose pixels do not decode is refused by the replica, with the server's
status and message (``input N: cannot decode image ...``).
"""

from __future__ import annotations

from typing import Any

from flask import Flask

from serving.http.decode import DecodePlan, PendingInput
from serving.http.routes.prediction import PREDICTION_ROUTES, PredictionRoutes


def carried(plan: DecodePlan) -> list[Any]:
    """A checked request's values as they go to the pipeline: images undecoded, texts as they are."""
    return [p if p.header is not None else p.value for p in plan.inputs]


def decoded(value: Any) -> Any:
    """A request value as the op takes it: an image that travelled undecoded is decoded now."""
    return value.decode() if isinstance(value, PendingInput) else value


class EncodedPredictionRoutes(PredictionRoutes):
    """The prediction routes, submitting images undecoded."""

    def values(self, plan: DecodePlan) -> list[Any]:
        # the replicas hold the pixels while the request runs: the decode budget counts them
        # as the server's does (PredictionRoutes.start reserves it before this)
        return carried(plan)


def submit_encoded_images(app: Flask) -> None:
    """Make ``app``'s prediction routes submit images undecoded: every view bound to its
    routes object is bound to an :class:`EncodedPredictionRoutes` on the same context."""
    routes = app.extensions[PREDICTION_ROUTES]
    encoded = EncodedPredictionRoutes(routes.ctx)
    rebound = 0
    for endpoint, view in list(app.view_functions.items()):
        if getattr(view, "__self__", None) is routes:
            app.view_functions[endpoint] = getattr(encoded, view.__name__)
            rebound += 1
    if not rebound:  # the app's routes changed shape: fail at start, not by decoding quietly
        raise RuntimeError("no prediction view found to rebind")
    app.extensions[PREDICTION_ROUTES] = encoded
