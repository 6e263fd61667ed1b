"""The Flask app: Paddle Serving compatible and native prediction endpoints,
health, metrics and config, and the page at ``/`` (``page.py``). Every
failure gets its real HTTP status."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from serving.config.schema import ServingConfig
from serving.engine.pipeline import Pipeline
from serving.engine.repository import PipelineRepository
from serving.engine.request import RequestState
from serving.errors import (
    ClientDisconnected,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    ServingError,
    Unauthorized,
    as_serving_error,
    error_for_status,
)
from serving.http.auth import bearer_matches
from serving.http.decode import InputLimits, decode_input, decoded_pixels
from serving.http.encode import plain, to_json
from serving.http.jsonio import FlaskJSON
from serving.http.page import add_page
from serving.http.parse import ParsedRequest, parse_native, parse_paddle

log = logging.getLogger(__name__)

HEALTH_PATHS = ("/health/live", "/health/ready", "/v2/health/live", "/v2/health/ready")


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


def limits_from_config(config: ServingConfig) -> HttpLimits:
    sources = config.dag_graph.sources
    body = max(config.op[s].local_service_conf.max_body_size for s in sources)
    return HttpLimits(
        max_body_size=body,
        max_inputs=config.max_inputs_per_request,
        inputs=InputLimits(max_image_pixels=config.max_image_pixels, max_request_pixels=2 * config.max_image_pixels),
    )


def max_body_size(repository: PipelineRepository) -> int:
    """The largest body any served pipeline takes (the app-wide limit; each pipeline checks its own)."""
    return max(limits_from_config(config).max_body_size for config in repository.config.pipelines)


def create_app(
    target: Pipeline | PipelineRepository,
    *,
    auth_token: str | None = None,
    limits: HttpLimits | None = None,
    metrics_text: Callable[[], bytes] | None = None,
) -> Flask:
    """Build the app around a :class:`PipelineRepository` (several pipelines)
    or one :class:`Pipeline`; started or starting. ``limits`` overrides every
    pipeline's own HTTP limits (tests). ``metrics_text`` renders ``/metrics``
    (default: the repository's own registry; the Ray backend adds its replicas')."""
    repo = target if isinstance(target, PipelineRepository) else PipelineRepository.of(target)
    app = Flask("batchline")
    app.json = FlaskJSON(app)  # orjson; answers keep UTF-8 text readable
    handlers = HandlerCount()
    app.extensions["batchline.handlers"] = handlers
    app.extensions["batchline.repository"] = repo

    def refresh_body_limit() -> None:
        app.config["MAX_CONTENT_LENGTH"] = limits.max_body_size if limits else max_body_size(repo)

    repo.on_reload(refresh_body_limit)

    def paddle_error(err: ServingError, logid: Any = None) -> Response:
        resp = jsonify(err_no=err.err_no, err_msg=err.message, key=[], value=[], logid=logid)
        return _with_status(resp, err)

    def native_error(err: ServingError) -> Response:
        return _with_status(jsonify(error={"status": err.status, "message": err.message}), err)

    def error_response(err: ServingError) -> Response:
        return paddle_error(err) if request.path.endswith("/prediction") else native_error(err)

    @app.errorhandler(ServingError)
    def _serving_error(err: ServingError) -> Response:
        return error_response(err)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        if exc.code == 413:
            limit = app.config["MAX_CONTENT_LENGTH"]
            err: ServingError = PayloadTooLarge(f"request body over max_body_size ({limit} bytes)")
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

    @app.before_request
    def _auth() -> None:
        if not auth_token or request.path in HEALTH_PATHS or page.file_for(request) is not None:
            return
        if not bearer_matches(request.headers.get("Authorization", ""), auth_token):
            raise Unauthorized("missing or wrong bearer token")

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
            raise PayloadTooLarge(f"request body over max_body_size ({pipe_limits.max_body_size} bytes)")
        return pipeline, pipe_limits

    def decode_all(parsed: ParsedRequest, input_limits: InputLimits) -> list[Any]:
        values, pixels = [], 0
        for i, (k, v, raw) in enumerate(parsed.inputs):
            values.append(decode_input(k, v, f"input {i}", input_limits, raw=raw))
            pixels += decoded_pixels(values[-1])
            if pixels > input_limits.max_request_pixels:
                raise PayloadTooLarge(
                    f"the request's images hold over {input_limits.max_request_pixels} pixels "
                    "in all (limit per request)"
                )
        return values

    def run_inputs(
        name: str, version: int | None, parsed: ParsedRequest, pipe_limits: HttpLimits
    ) -> list[RequestState]:
        values = decode_all(parsed, pipe_limits.inputs)
        route = repo.config.routes.get(name)
        key = request.headers.get(route.key_header) if route is not None and version is None else None
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
    def reload() -> Response:
        if not auth_token:
            raise Forbidden(
                "reload over HTTP needs a bearer token (auth_token in the config or BATCHLINE_AUTH_TOKEN); "
                "without one, send the server SIGHUP"
            )
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
    if err.retry_after is not None:
        resp.headers["Retry-After"] = str(max(1, int(round(err.retry_after))))
    return resp
