"""One inference request through the HTTP API's prediction routes, the steps
and checks ``POST /{name}/prediction`` takes, in its order: the pipeline and
its limits (404, 413 from the size), the request read and parsed (400, 413:
counts before elements), admission, the images' headers and the decode budget,
then decoding and submission (``PredictionRoutes.start``); waiting while
watching the client; the decode reservation released after the answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from serving.http.inference_protocol.answer import OutputTensor, output_tensors
from serving.http.inference_protocol.model import ModelView, ModelViews, parse_version
from serving.http.inference_protocol.request import InferRequest, chosen_outputs, parse_request
from serving.http.limits import HttpLimits
from serving.http.routes.prediction import PredictionRoutes
from serving.http.routes.waiting import wait_for_results


@dataclass(frozen=True)
class InferAnswer:
    model_name: str
    model_version: str  # the version that answered
    id: str
    outputs: list[OutputTensor]


@dataclass(frozen=True)
class CallFacts:
    """What the transport tells of the call: which front end it is (metrics), the request's
    size, its headers (a route's key header), whether its client went away, and its own
    time limit (gRPC's deadline)."""

    protocol: str
    size: int | None
    header: Callable[[str], str | None]
    gone: Callable[[], bool]
    cap_timeout_ms: Callable[[int | None], int | None] = lambda ms: ms
    # called once the inputs are decoded and submitted: what held the encoded request may let go
    submitted: Callable[[], None] = lambda: None


def model(routes: PredictionRoutes, views: ModelViews, name: str, version: str) -> ModelView:
    """The model a request names (404 when not served)."""
    return views.get(routes.repository.config, name, parse_version(version))


def infer(
    routes: PredictionRoutes,
    views: ModelViews,
    name: str,
    version_text: str,
    read: Callable[[HttpLimits], InferRequest],
    call: CallFacts,
) -> InferAnswer:
    """Run the request ``read`` gives (called once the pipeline's limits are known: it is
    the transport's to bound by them) on model ``name`` at ``version_text``."""
    version = parse_version(version_text)
    pipeline, limits = routes.target(name, version, call.size)
    request = read(limits)
    view = views.get(routes.repository.config, name, version)
    chosen = chosen_outputs(request.outputs, view.outputs)
    parsed = parse_request(
        request,
        kind=view.input.name,
        max_inputs=limits.max_inputs,
        priority_levels=pipeline.config.dag.priority_levels,
    )
    parsed.timeout_ms = call.cap_timeout_ms(parsed.timeout_ms)
    request_id = request.id
    del request  # its elements: from here on only the parsed inputs hold them
    key = routes.route_key(name, version, call.header)
    handles, reservation = routes.start(name, version, parsed, pipeline, limits, key, call.protocol)
    parsed.inputs.clear()  # decoded into the handles
    call.submitted()
    try:
        wait_for_results(handles, limits.wait_slice_s, call.gone)
        results = [h.result(timeout=0) for h in handles]
    finally:
        reservation.release()
    answered = handles[0].owner.version if handles and handles[0].owner is not None else pipeline.version
    return InferAnswer(name, str(answered), request_id, output_tensors(results, chosen))
