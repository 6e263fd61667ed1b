"""One inference request through the request core (:mod:`serving.service.core`), with
every check a prediction takes, in its order: counts before elements, admission before
decoding, the decode reservation released after the answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from serving.batching.request import RequestState
from serving.service.core import RequestCore, Started, answered_version, is_light
from serving.service.limits import RequestLimits
from serving.service.open_inference.answer import OutputTensor, output_tensors
from serving.service.open_inference.model import ModelView, ModelViews, TensorSpec, parse_version
from serving.service.open_inference.request import InferRequest, chosen_outputs, parse_request
from serving.service.parse import ParsedRequest
from serving.service.served_pipelines import ServedPipeline


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


def model(core: RequestCore, views: ModelViews, name: str, version: str) -> ModelView:
    """The model a request names (404 when not served)."""
    return views.get(core.repository.config, name, parse_version(version))


@dataclass
class PreparedInfer:
    """A request read, parsed and checked, not yet submitted: :meth:`start`, wait, :meth:`answer`."""

    core: RequestCore
    name: str
    version: int | None
    parsed: ParsedRequest
    target: tuple[ServedPipeline, RequestLimits]
    key: str | None
    call: CallFacts
    request_id: str
    chosen: list[TensorSpec]

    @property
    def light(self) -> bool:
        """Whether it may be submitted and answered on an event loop (:func:`serving.service.core.is_light`)."""
        return is_light(self.target[0], self.parsed)

    def start(self) -> Started:
        started = self.core.start(self.name, self.version, self.parsed, self.target, self.key, self.call.protocol)
        self.parsed.inputs.clear()  # decoded into the handles
        self.call.submitted()
        return started

    def run(self) -> InferAnswer:
        """Submit and wait, in the caller's thread."""
        return self.answer(self.start().wait(self.call.gone))

    def answer(self, handles: Sequence[RequestState]) -> InferAnswer:
        results = [h.result(timeout=0) for h in handles]
        answered = answered_version(handles, self.target[0].version)
        return InferAnswer(self.name, str(answered), self.request_id, output_tensors(results, self.chosen))


def prepare(
    core: RequestCore,
    views: ModelViews,
    name: str,
    version: int | None,
    read: Callable[[RequestLimits], InferRequest],
    call: CallFacts,
) -> PreparedInfer:
    """Read the request ``read`` gives (called once the pipeline's limits are known: it is
    the transport's to bound by them) for model ``name`` at ``version``, and check it."""
    target = core.target(name, version, call.size)
    pipeline, limits = target
    request = read(limits)
    view = views.get(core.repository.config, name, version)
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
    key = core.route_key(name, version, call.header)
    return PreparedInfer(core, name, version, parsed, target, key, call, request_id, chosen)
