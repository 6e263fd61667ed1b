"""The Flask app: Paddle Serving compatible and native prediction endpoints,
health, metrics and config, and the page at ``/`` (``page.py``). Every
failure gets its real HTTP status."""

from __future__ import annotations

import io
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Request, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from serving.config.schema import ServingConfig
from serving.engine.decode_budget import DecodeBudget, budget_bytes, request_bytes_limit
from serving.engine.pipeline import Pipeline
from serving.engine.pipeline_repository import PipelineRepository
from serving.engine.request import RequestState
from serving.errors import (
    ClientDisconnected,
    NotFound,
    ServingError,
    as_serving_error,
    error_for_status,
)
from serving.http.access import Access
from serving.http.decode import DecodePlan, InputLimits, plan_inputs
from serving.http.encode import plain, to_json
from serving.http.error_body import body_over_limit, error_document, error_headers
from serving.http.jsonio import FlaskJSON
from serving.http.origins import AccessPolicy
from serving.http.page import add_page
from serving.http.parse import ParsedRequest, parse_native, parse_paddle

log = logging.getLogger(__name__)


@dataclass
class HttpLimits:
    max_body_size: int
    max_inputs: int
    inputs: InputLimits
    wait_slice_s: float = 0.05  # how often a waiting handler checks for a disconnected client


class HandlerCount:
    """Prediction handlers running now (the server waits for zero on shutdown)."""

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


class BoundedRequest(Request):
    """Flask's request, with multipart parts kept in memory, never in temporary files:
    the body is bounded already (``max_body_size``, ``http.max_buffered_mb``), the app
    reads every part whole anyway, and ``/tmp`` holds the body the HTTP front stored, so
    werkzeug's own spooling of parts over 500 KB would only store it there a second time."""

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> io.BytesIO:
        return io.BytesIO()


def limits_from_config(config: ServingConfig) -> HttpLimits:
    sources = config.dag_graph.sources
    body = max(config.op[s].local_service_conf.max_body_size for s in sources)
    return HttpLimits(
        max_body_size=body,
        max_inputs=config.max_inputs_per_request,
        inputs=InputLimits(
            max_image_pixels=config.max_image_pixels,
            max_request_pixels=2 * config.max_image_pixels,
            max_request_bytes=request_bytes_limit(config.max_image_pixels),
        ),
    )


def max_body_size(repository: PipelineRepository) -> int:
    """The largest body any served pipeline takes (the app-wide limit; each pipeline checks its own)."""
    return max(limits_from_config(config).max_body_size for config in repository.config.pipelines)


def decode_budget_bytes(repository: PipelineRepository) -> int:
    """The server's decode budget: ``decode_budget_mb``, or derived from the pipelines' ``max_image_pixels``."""
    config = repository.config
    return budget_bytes(config.decode_budget_mb, (p.max_image_pixels for p in config.pipelines))


def create_app(
    target: Pipeline | PipelineRepository,
    *,
    auth_token: str | None = None,
    admin_token: str | None = None,
    limits: HttpLimits | None = None,
    metrics_text: Callable[[], bytes] | None = None,
    decode_budget: DecodeBudget | None = None,
) -> Flask:
    """Build the app around a :class:`PipelineRepository` (several pipelines)
    or one :class:`Pipeline`; started or starting. ``auth_token`` guards the
    routes, ``admin_token`` the admin ones (``serving.http.access``; the
    allow-lists come from the config's ``security``). ``limits`` overrides every
    pipeline's own HTTP limits (tests). ``metrics_text`` renders ``/metrics``
    (default: the repository's own registry; the Ray backend adds its replicas').
    ``decode_budget`` replaces the one the config sets (tests)."""
    repo = target if isinstance(target, PipelineRepository) else PipelineRepository.of(target)
    app = Flask("batchline")
    app.request_class = BoundedRequest
    app.json = FlaskJSON(app)  # orjson; answers keep UTF-8 text readable
    handlers = HandlerCount()
    app.extensions["batchline.handlers"] = handlers
    app.extensions["batchline.repository"] = repo

    def refresh_body_limit() -> None:
        app.config["MAX_CONTENT_LENGTH"] = limits.max_body_size if limits else max_body_size(repo)

    repo.on_reload(refresh_body_limit)

    budget = decode_budget or DecodeBudget(0)
    app.extensions["batchline.decode_budget"] = budget
    if decode_budget is None:  # a reload may change the key or the pipelines' max_image_pixels
        repo.on_reload(lambda: budget.resize(decode_budget_bytes(repo)))

    @app.teardown_request
    def _release_decode_budget(exc: BaseException | None) -> None:
        reservation = g.pop("decode_reservation", None)
        if reservation is not None:
            reservation.release()

    def paddle_error(err: ServingError, logid: Any = None) -> Response:
        return _with_status(jsonify(error_document(request.path, err, logid)), err)

    def error_response(err: ServingError) -> Response:
        return _with_status(jsonify(error_document(request.path, err)), err)

    @app.errorhandler(ServingError)
    def _serving_error(err: ServingError) -> Response:
        return error_response(err)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        if exc.code == 413:
            limit = app.config["MAX_CONTENT_LENGTH"]
            err: ServingError = body_over_limit(limit)
        elif exc.code == 404:
            names = ", ".join(sorted(repo.config.routes))
            err = NotFound(f"no route {request.path[:128]!r}; pipelines: {names} (GET /pipelines lists them)")
        else:
            err = error_for_status(exc.code or 500, exc.description or exc.name)
        return error_response(err)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.path)
        return error_response(as_serving_error(exc))

    page = add_page(app)

    access = Access(auth_token, admin_token, AccessPolicy.of(repo.config.security))

    @app.before_request
    def _access() -> None:
        access.check(request, page_file=page.file_for(request) is not None)  # refusals: _serving_error

    # per pipeline object, computed on its first request (a reload makes new pipeline objects)
    pipeline_limits: weakref.WeakKeyDictionary[Pipeline, HttpLimits] = weakref.WeakKeyDictionary()

    def target_of(name: str, version: int | None) -> tuple[Pipeline, HttpLimits]:
        """The pipeline whose input kind and limits apply (a routed request: the default version)."""
        pipeline = repo.pipeline(name, version)
        pipe_limits = limits or pipeline_limits.get(pipeline)
        if pipe_limits is None:
            pipe_limits = pipeline_limits.setdefault(pipeline, limits_from_config(pipeline.config))
        length = request.content_length
        if length is not None and length > pipe_limits.max_body_size:
            raise body_over_limit(pipe_limits.max_body_size)
        return pipeline, pipe_limits

    def decode_in_budget(plan: DecodePlan, time_limit_s: float) -> list[Any]:
        """Decode holding the plan's bytes in the server's decode budget until this
        handler is done (``_release_decode_budget``): the arrays live until the answer."""
        reservation = budget.reserve(plan.peak_bytes, time_limit_s)
        g.decode_reservation = reservation
        values = plan.decode()
        reservation.shrink(plan.held_bytes)  # decoding's transient copies are gone
        return values

    def run_inputs(
        name: str, version: int | None, parsed: ParsedRequest, pipe_limits: HttpLimits
    ) -> list[RequestState]:
        route = repo.config.routes.get(name)
        key = request.headers.get(route.key_header) if route is not None and version is None else None
        # nothing is decoded before admission (503) and every size limit (413, from the headers) pass
        repo.precheck(
            name, len(parsed.inputs), version=version, key=key, timeout_ms=parsed.timeout_ms, logid=parsed.logid
        )
        plan = plan_inputs(parsed.inputs, pipe_limits.inputs)
        values = decode_in_budget(plan, repo.pipeline(name, version).time_limit_s(parsed.timeout_ms))
        handles = repo.submit(
            name,
            values,
            version=version,
            key=key,
            priority=parsed.priority,
            timeout_ms=parsed.timeout_ms,
            logid=parsed.logid,
        )
        disconnected: Callable[[], bool] = request.environ.get("waitress.client_disconnected", lambda: False)
        for i, handle in enumerate(handles):
            while not handle.wait(min(pipe_limits.wait_slice_s, max(0.0, handle.remaining()))):
                if handle.remaining() <= 0:
                    break
                if disconnected():
                    for h in handles:
                        h.fail(ClientDisconnected("client closed the connection"))
                    break
            try:
                handle.result(timeout=0)
            except TimeoutError:
                pass
            except ServingError as err:
                failure = err.with_prefix(f"input {i}: ") if len(handles) > 1 else err
                for h in handles:
                    h.fail(failure)
                raise failure from None
        return handles

    def paddle_prediction(name: str, version: int | None) -> Response:
        with handlers:
            pipeline, pipe_limits = target_of(name, version)
            parsed = parse_paddle(
                request.get_data(),
                kind=pipeline.input_kind() or "image",
                max_inputs=pipe_limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            try:
                handles = run_inputs(name, version, parsed, pipe_limits)
            except ServingError as err:
                return paddle_error(err, parsed.logid)
            values = [to_json(h.result(timeout=0)) for h in handles]
            return jsonify(err_no=0, err_msg="", key=["result"] * len(values), value=values, logid=parsed.logid)

    def native_prediction(name: str, version: int | None) -> Response:
        with handlers:
            pipeline, pipe_limits = target_of(name, version)
            # decided now: a reload may remove the route while the request runs, never its answer
            route = repo.config.routes.get(name)
            show_version = version is not None or (route is not None and len(route.versions) > 1)
            parsed = parse_native(
                request,
                kind=pipeline.input_kind() or "image",
                max_inputs=pipe_limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            handles = run_inputs(name, version, parsed, pipe_limits)
            body: dict[str, Any] = {"results": [plain(h.result(timeout=0)) for h in handles]}
            if parsed.timing:
                body["timing"] = [h.timing_summary() for h in handles]
            if show_version:
                body["version"] = handles[0].owner.version if handles else None
            return jsonify(body)

    def config_view(name: str, version: int | None) -> Response:
        pipeline = repo.pipeline(name, version)
        return jsonify(
            pipeline=pipeline.name,
            version=pipeline.version,
            generation=repo.generation.number,
            input=pipeline.input_kind() or "image",
            ops=pipeline.op_table(),
        )

    @app.post("/<name>/prediction")
    def prediction(name: str) -> Response:
        return paddle_prediction(name, None)

    @app.post("/<name>/v<int:version>/prediction")
    def prediction_version(name: str, version: int) -> Response:
        return paddle_prediction(name, version)

    @app.post("/<name>/predict")
    def predict(name: str) -> Response:
        return native_prediction(name, None)

    @app.post("/<name>/v<int:version>/predict")
    def predict_version(name: str, version: int) -> Response:
        return native_prediction(name, version)

    @app.get("/<name>/config")
    def config(name: str) -> Response:
        return config_view(name, None)

    @app.get("/<name>/v<int:version>/config")
    def config_version(name: str, version: int) -> Response:
        return config_view(name, version)

    @app.get("/pipelines")
    def pipelines() -> Response:
        return jsonify(repo.listing())

    @app.post("/admin/reload")
    def reload() -> Response:  # access: the admin token (serving.http.access)
        report = repo.reload()
        return jsonify(status="reloaded", **report.as_dict())

    @app.get("/health/live")
    @app.get("/v2/health/live")
    def live() -> Response | tuple[Response, int]:
        if getattr(repo, "live", True):
            return jsonify(status="live")
        return jsonify(status="broken: an op lost every instance and cannot restart it"), 503

    @app.get("/health/ready")
    @app.get("/v2/health/ready")
    def ready() -> Response | tuple[Response, int]:
        if repo.ready:
            return jsonify(status="ready", generation=repo.generation.number)
        return jsonify(status="not ready"), 503

    @app.get("/metrics")
    def metrics() -> Response:
        text = metrics_text() if metrics_text is not None else repo.metrics.render()
        return Response(text, mimetype="text/plain; version=0.0.4")

    return app


def _with_status(resp: Response, err: ServingError) -> Response:
    resp.status_code = err.status
    resp.headers.extend(error_headers(err, request.headers.get("Authorization")))
    return resp
