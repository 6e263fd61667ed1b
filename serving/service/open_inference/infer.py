"""One inference request through the request core (:mod:`serving.service.core`), with
every check a prediction takes, in its order: counts before elements, admission before
decoding, the decode reservation released after the answer. Its answer: one row per
input; ``result`` holds each row's JSON, byte for byte the native route's ``results[i]``,
a typed output one field of each row."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.batching.request import RequestState
from serving.errors import InternalError
from serving.service.core import RequestCore, Started, answered_version, is_light
from serving.service.jsonio import to_json
from serving.service.limits import RequestLimits
from serving.service.open_inference.model import BYTES, RESULT, ModelView, ModelViews, TensorSpec, parse_version
from serving.service.open_inference.request import InferRequest, chosen_outputs, parse_request
from serving.service.open_inference.tensors import serialize_bytes, serialize_fp32
from serving.service.parse import ParsedRequest
from serving.service.served_pipelines import ServedPipeline


@dataclass(frozen=True)
class OutputTensor:
    name: str
    datatype: str
    values: list[Any]  # str for BYTES, float for FP32

    @property
    def shape(self) -> list[int]:
        return [len(self.values)]

    def serialized(self) -> bytes:
        """The binary form (``raw_output_contents``, HTTP's binary tensor data)."""
        if self.datatype == BYTES:
            return serialize_bytes(v.encode("utf-8") for v in self.values)
        return serialize_fp32(self.values)


def _field(result: Any, spec: TensorSpec, row: int) -> Any:
    value = result.get(spec.name) if isinstance(result, Mapping) else None
    if spec.datatype == BYTES and isinstance(value, str):
        return value
    if spec.datatype != BYTES and isinstance(value, numbers.Real) and not isinstance(value, bool):  # numpy's too
        return float(value)
    # the final op broke its answer_fields declaration
    raise InternalError(f"row {row}: the answer has no {spec.datatype} field {spec.name!r}")


def output_tensors(results: Sequence[Any], chosen: Sequence[TensorSpec]) -> list[OutputTensor]:
    outputs = []
    for spec in chosen:
        if spec.name == RESULT:
            values = [to_json(r) for r in results]
        else:
            values = [_field(r, spec, i) for i, r in enumerate(results)]
        outputs.append(OutputTensor(spec.name, spec.datatype, values))
    return outputs


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
    target: tuple[ServedPipeline, RequestLimits],
    read: Callable[[RequestLimits], InferRequest],
    call: CallFacts,
) -> PreparedInfer:
    """Read the request ``read`` gives (called with the limits of ``target``, ``core.target``'s
    pipeline for it: the transport's to bound the request by) for model ``name`` at ``version``,
    and check it."""
    pipeline, limits = target
    request = read(limits)
    view = views.get(core.repository.config, name, version)
    if view.input is None:  # the doors answer a script's pipeline themselves (serving.paddle_serving)
        raise InternalError(f"model {name!r} reads its own requests")
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
