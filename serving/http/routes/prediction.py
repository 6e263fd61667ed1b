"""The prediction routes: Paddle Serving's ``POST /<name>/prediction`` and the
native ``POST /<name>/predict``, each also as ``/<name>/v<n>/...`` for one
version: each parses its body and hands it to the request core
(:mod:`serving.service.core`), which admits, checks, decodes, submits and waits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request, Response

from serving.errors import ServingError
from serving.http.json_answer import json_response
from serving.http.native_request import parse_native
from serving.http.routes.context import RouteContext
from serving.http.routes.errors import error_response
from serving.http.wsgi_call import client_gone
from serving.service.core import RequestCore, answered_version, paddle_document
from serving.service.encode import plain
from serving.service.parse import parse_paddle

if TYPE_CHECKING:
    from serving.http.app import HttpApp


class PredictionRoutes:
    def __init__(self, core: RequestCore):
        self.core = core

    def register(self, app: HttpApp) -> None:
        latest = {"version": None}
        app.add_url_rule("/<name>/prediction", "prediction", self.paddle, methods=["POST"], defaults=latest)
        app.add_url_rule("/<name>/v<int:version>/prediction", "prediction_version", self.paddle, methods=["POST"])
        app.add_url_rule("/<name>/predict", "predict", self.native, methods=["POST"], defaults=latest)
        app.add_url_rule("/<name>/v<int:version>/predict", "predict_version", self.native, methods=["POST"])

    def paddle(self, request: Request, name: str, version: int | None) -> Response:
        core = self.core
        with core.handlers:
            target = core.target(name, version, request.content_length)
            pipeline, limits = target
            parsed = parse_paddle(
                request.get_data(),
                kind=pipeline.input_kind() or "image",
                max_inputs=limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            try:
                started = core.start(name, version, parsed, target, core.route_key(name, version, request.headers.get))
                handles = started.wait(client_gone(request.environ))
            except ServingError as err:
                return error_response(request, err, parsed.logid)
            return json_response(paddle_document(handles, parsed.logid))

    def native(self, request: Request, name: str, version: int | None) -> Response:
        core = self.core
        with core.handlers:
            target = core.target(name, version, request.content_length)
            pipeline, limits = target
            # decided now: a reload may remove the route while the request runs, never its answer
            show_version = core.shows_version(name, version)
            parsed = parse_native(
                request,
                kind=pipeline.input_kind() or "image",
                max_inputs=limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            started = core.start(name, version, parsed, target, core.route_key(name, version, request.headers.get))
            handles = started.wait(client_gone(request.environ))
            body: dict[str, Any] = {"results": [plain(h.result(timeout=0)) for h in handles]}
            if parsed.timing:
                body["timing"] = [h.timing_summary() for h in handles]
            if show_version:
                body["version"] = answered_version(handles, None)
            return json_response(body)


def register(app: HttpApp, ctx: RouteContext) -> None:
    PredictionRoutes(ctx.core).register(app)
