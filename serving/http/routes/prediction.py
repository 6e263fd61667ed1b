"""The prediction routes: Paddle Serving's ``POST /<name>/prediction`` and the
native ``POST /<name>/predict``, each also as ``/<name>/v<n>/...`` for one
version. Nothing is decoded before admission and every size limit pass;
decoded inputs are held in the server's decode budget until the answer."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from flask import Flask, Response, g, jsonify, request

from serving.engine.decode_budget import Reservation
from serving.engine.request import RequestState
from serving.errors import ServingError
from serving.http.decode import DecodePlan, plan_inputs
from serving.http.encode import plain, to_json
from serving.http.error_body import body_over_limit
from serving.http.limits import HttpLimits, limits_from_config
from serving.http.parse import ParsedRequest, parse_native, parse_paddle
from serving.http.routes.context import RouteContext
from serving.http.routes.errors import error_response
from serving.http.routes.waiting import wait_for_results
from serving.http.served_repository import ServedPipeline

#: where the app keeps its routes object (``app.extensions``); the Ray ingress rebinds it there
PREDICTION_ROUTES = "batchline.prediction"


def release_decode_budget(exc: BaseException | None) -> None:
    """After each request: give back the decode budget its inputs held."""
    reservation = g.pop("decode_reservation", None)
    if reservation is not None:
        reservation.release()


class PredictionRoutes:
    def __init__(self, ctx: RouteContext):
        self.ctx = ctx
        self.repository = ctx.repository
        # per pipeline object, computed on its first request (a reload makes new pipeline objects)
        self._limits: weakref.WeakKeyDictionary[ServedPipeline, HttpLimits] = weakref.WeakKeyDictionary()

    def register(self, app: Flask) -> None:
        app.teardown_request(release_decode_budget)
        app.add_url_rule("/<name>/prediction", "prediction", self.prediction, methods=["POST"])
        app.add_url_rule("/<name>/v<int:version>/prediction", "prediction_version", self.paddle, methods=["POST"])
        app.add_url_rule("/<name>/predict", "predict", self.predict, methods=["POST"])
        app.add_url_rule("/<name>/v<int:version>/predict", "predict_version", self.native, methods=["POST"])

    def prediction(self, name: str) -> Response:
        return self.paddle(name, None)

    def predict(self, name: str) -> Response:
        return self.native(name, None)

    def paddle(self, name: str, version: int | None) -> Response:
        with self.ctx.handlers:
            pipeline, limits = self.target(name, version, request.content_length)
            parsed = parse_paddle(
                request.get_data(),
                kind=pipeline.input_kind() or "image",
                max_inputs=limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            try:
                handles = self._run(name, version, parsed, pipeline, limits)
            except ServingError as err:
                return error_response(err, parsed.logid)
            return jsonify(**paddle_document(handles, parsed.logid))

    def native(self, name: str, version: int | None) -> Response:
        with self.ctx.handlers:
            pipeline, limits = self.target(name, version, request.content_length)
            # decided now: a reload may remove the route while the request runs, never its answer
            route = self.repository.config.routes.get(name)
            show_version = version is not None or (route is not None and len(route.versions) > 1)
            parsed = parse_native(
                request,
                kind=pipeline.input_kind() or "image",
                max_inputs=limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            handles = self._run(name, version, parsed, pipeline, limits)
            body: dict[str, Any] = {"results": [plain(h.result(timeout=0)) for h in handles]}
            if parsed.timing:
                body["timing"] = [h.timing_summary() for h in handles]
            if show_version:
                body["version"] = handles[0].owner.version if handles else None
            return jsonify(body)

    def target(self, name: str, version: int | None, length: int | None) -> tuple[ServedPipeline, HttpLimits]:
        """The pipeline whose input kind and limits apply (a routed request: the default version);
        413 when the body's ``length`` is over its limit."""
        pipeline = self.repository.pipeline(name, version)
        limits = self.ctx.limits or self._limits.get(pipeline)
        if limits is None:
            limits = self._limits.setdefault(pipeline, limits_from_config(pipeline.config))
        if length is not None and length > limits.max_body_size:
            raise body_over_limit(limits.max_body_size)
        return pipeline, limits

    def _run(
        self, name: str, version: int | None, parsed: ParsedRequest, pipeline: ServedPipeline, limits: HttpLimits
    ) -> Sequence[RequestState]:
        """``pipeline``: the one :meth:`target` chose, whose limits and time limit apply."""
        key = self.route_key(name, version, request.headers.get)
        handles, g.decode_reservation = self.start(name, version, parsed, pipeline, limits, key)
        disconnected: Callable[[], bool] = request.environ.get("waitress.client_disconnected", lambda: False)
        wait_for_results(handles, limits.wait_slice_s, disconnected)
        return handles

    def route_key(self, name: str, version: int | None, header: Callable[[str], str | None]) -> str | None:
        """The routing key of a request to ``name`` (its route's ``key_header``), None for a versioned one."""
        route = self.repository.config.routes.get(name)
        return header(route.key_header) if route is not None and version is None else None

    def start(
        self,
        name: str,
        version: int | None,
        parsed: ParsedRequest,
        pipeline: ServedPipeline,
        limits: HttpLimits,
        key: str | None,
        protocol: str = "http",
    ) -> tuple[Sequence[RequestState], Reservation]:
        """Admit, check, decode and submit ``parsed``: its handles, and the decode budget its
        inputs hold until the answer (the caller releases it; a failure here releases it).
        ``protocol``: the front end it came in by (metrics)."""
        repo = self.repository
        # nothing is decoded before admission (503) and every size limit (413, from the headers) pass
        repo.precheck(
            name, len(parsed.inputs), version=version, key=key, timeout_ms=parsed.timeout_ms, logid=parsed.logid
        )
        plan = plan_inputs(parsed.inputs, limits.inputs)
        # the arrays live until the answer
        reservation = self.ctx.decode_budget.reserve(plan.peak_bytes, pipeline.time_limit_s(parsed.timeout_ms))
        try:
            values = self.values(plan)
            reservation.shrink(plan.held_bytes)  # decoding's transient copies are gone
            handles = repo.submit(
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
        return handles, reservation

    def values(self, plan: DecodePlan) -> list[Any]:
        """A checked request's values as the pipeline takes them: its images decoded."""
        return plan.decode()


def paddle_document(handles: Sequence[RequestState], logid: Any) -> dict[str, Any]:
    """Paddle Serving's answer to a request whose every input succeeded."""
    values = [to_json(h.result(timeout=0)) for h in handles]
    return {"err_no": 0, "err_msg": "", "key": ["result"] * len(values), "value": values, "logid": logid}


def register(app: Flask, ctx: RouteContext) -> None:
    routes = PredictionRoutes(ctx)
    routes.register(app)
    app.extensions[PREDICTION_ROUTES] = routes  # the other fronts answer with it (fast_prediction, v2, gRPC)
