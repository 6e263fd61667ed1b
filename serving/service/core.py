"""The request core: one pass of a prediction request, whatever door it came by. Each door
parses its wire format into a :class:`~serving.service.parse.ParsedRequest`, then calls
:meth:`RequestCore.target` (404, 413 from the size), :meth:`RequestCore.start` (admission
before anything is decoded, the limits, the decode budget, submission), then
:meth:`Started.wait` (a thread) or :meth:`Started.settle` (an event loop)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from serving.batching.decode_budget import DecodeBudget, Reservation
from serving.batching.request import RequestState
from serving.errors import ServingError
from serving.service.decode import DecodePlan, plan_inputs
from serving.service.error_body import body_over_limit
from serving.service.json_budget import value_budget
from serving.service.jsonio import to_json
from serving.service.limits import RequestLimits, largest_max_inputs, limits_from_config
from serving.service.parse import ParsedRequest
from serving.service.served_pipelines import ServedPipeline, ServedRepository
from serving.service.waiting import settled, wait_for_results

Gone = Callable[[], bool]


def decoded_values(plan: DecodePlan) -> list[Any]:
    """A checked request's values as the pipeline takes them: its images decoded."""
    return plan.decode()


def never_gone() -> bool:
    return False


class HandlerCount:
    """Requests in the core now: the server waits for zero before it closes (drain)."""

    def __init__(self) -> None:
        self._n = 0
        self._cond = threading.Condition()

    def __enter__(self) -> HandlerCount:
        with self._cond:
            self._n += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._cond:
            self._n -= 1
            self._cond.notify_all()

    def wait_zero(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._n == 0, timeout)


@dataclass
class Started:
    """A submitted request: its handles, and the decode budget its inputs hold until the answer."""

    handles: Sequence[RequestState]
    reservation: Reservation
    limits: RequestLimits

    def wait(self, gone: Gone = never_gone) -> Sequence[RequestState]:
        """Block until every answer is in (raise the first failure); the budget is released either way."""
        try:
            wait_for_results(self.handles, self.limits.wait_slice_s, gone)
        finally:
            self.release()
        return self.handles

    async def settle(self, gone: Gone = never_gone) -> Sequence[RequestState]:
        """:meth:`wait` on an event loop: no thread waits, the loop is woken by the engine."""
        try:
            await settled(self.handles, self.limits.wait_slice_s, gone)
            wait_for_results(self.handles, self.limits.wait_slice_s, gone)  # settled: raises, never waits
        finally:
            self.release()
        return self.handles

    def release(self) -> None:
        self.reservation.release()


class RequestCore:
    """The steps every door takes, on one repository. ``values`` turns a checked request's
    inputs into what is submitted (Ray: the files undecoded); ``limits`` replaces every pipeline's."""

    def __init__(
        self,
        repository: ServedRepository,
        decode_budget: DecodeBudget,
        *,
        handlers: HandlerCount | None = None,
        limits: RequestLimits | None = None,
        values: Callable[[DecodePlan], list[Any]] = decoded_values,
    ):
        self.repository = repository
        self.decode_budget = decode_budget
        self.handlers = handlers or HandlerCount()  # requests in the core now: drain waits for zero
        self.limits = limits
        self.values = values
        # per pipeline object, computed on its first request (a reload makes new pipeline objects)
        self._limits: weakref.WeakKeyDictionary[ServedPipeline, RequestLimits] = weakref.WeakKeyDictionary()

    def target(self, name: str, version: int | None, length: int | None) -> tuple[ServedPipeline, RequestLimits]:
        """The pipeline whose input kind and limits apply (a routed request: the default version);
        413 when the request's ``length`` in bytes is over its limit."""
        pipeline = self.repository.pipeline(name, version)
        limits = self.limits or self._limits.get(pipeline)
        if limits is None:
            limits = self._limits.setdefault(pipeline, limits_from_config(pipeline.config))
        if length is not None and length > limits.max_body_size:
            raise body_over_limit(limits.max_body_size)
        return pipeline, limits

    def route_key(self, name: str, version: int | None, header: Callable[[str], str | None]) -> str | None:
        """The routing key of a request to ``name`` (its route's ``key_header``), None for a versioned one."""
        route = self.repository.config.routes.get(name)
        return header(route.key_header) if route is not None and version is None else None

    def shows_version(self, name: str, version: int | None) -> bool:
        """Whether an answer names the version that answered: asked for one, or the route has several."""
        route = self.repository.config.routes.get(name)
        return version is not None or (route is not None and len(route.versions) > 1)

    def takes_text(self, name: str, version: int | None) -> bool:
        """Whether ``name`` (at ``version``) is a text pipeline (False for one not served)."""
        try:
            return self.repository.pipeline(name, version).input_kind() == "text"
        except ServingError:
            return False

    def max_values(self) -> int:
        """What a message may make a parser build before its pipeline is known: a JSON body's
        value budget for the largest ``max_inputs_per_request`` served."""
        return value_budget(largest_max_inputs(self.repository.config))

    def start(
        self,
        name: str,
        version: int | None,
        parsed: ParsedRequest,
        target: tuple[ServedPipeline, RequestLimits],
        key: str | None,
        protocol: str = "http",
    ) -> Started:
        """Admit, check, decode and submit ``parsed`` to the ``target`` :meth:`target` chose
        (a failure here releases what it took). ``protocol``: the door it came by (metrics)."""
        pipeline, limits = target
        repo = self.repository
        # nothing is decoded before admission (503) and every size limit (413, from the headers) pass
        repo.precheck(
            name, len(parsed.inputs), version=version, key=key, timeout_ms=parsed.timeout_ms, logid=parsed.logid
        )
        plan = plan_inputs(parsed.inputs, limits.inputs)
        # the arrays live until the answer
        reservation = self.decode_budget.reserve(plan.peak_bytes, pipeline.time_limit_s(parsed.timeout_ms))
        try:
            values = self.values(plan)
            reservation.shrink(plan.held_bytes)  # decoding's transient copies are gone
        except BaseException:
            reservation.release()
            raise
        return self.submit(name, version, values, parsed, target, key, reservation, protocol)

    def submit(
        self,
        name: str,
        version: int | None,
        values: Sequence[Any],
        parsed: ParsedRequest,
        target: tuple[ServedPipeline, RequestLimits],
        key: str | None,
        reservation: Reservation,
        protocol: str,
    ) -> Started:
        """Submit ``values`` (checked; ``parsed`` gives their options) holding ``reservation``
        until the answer; a failure to submit releases it."""
        try:
            handles = self.repository.submit(
                name,
                values,
                version=version,
                key=key,
                priority=parsed.priority,
                timeout_ms=parsed.timeout_ms,
                logid=parsed.logid,
                protocol=protocol,
            )
        except BaseException:
            reservation.release()
            raise
        return Started(handles, reservation, target[1])


def is_light(pipeline: ServedPipeline, parsed: ParsedRequest) -> bool:
    """Whether ``parsed`` costs little to submit and answer on an event loop: text (nothing to
    decode) and one input (one value's submission never waits for the engine's admission)."""
    return pipeline.input_kind() == "text" and len(parsed.inputs) == 1


def paddle_document(handles: Sequence[RequestState], logid: Any) -> dict[str, Any]:
    """Paddle Serving's answer to a request whose every input succeeded."""
    values = [to_json(h.result(timeout=0)) for h in handles]
    return {"err_no": 0, "err_msg": "", "key": ["result"] * len(values), "value": values, "logid": logid}


def answered_version(handles: Sequence[RequestState], fallback: int | None) -> int | None:
    """The version that answered a request (its first input's pipeline)."""
    return handles[0].owner.version if handles and handles[0].owner is not None else fallback
