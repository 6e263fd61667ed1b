"""The probes, open to anyone (``serving.service.auth.OPEN_PATHS``), each also under KServe's
``/v2`` prefix: live until an op lost every instance for good, ready once every pipeline of
the current generation is loaded and warm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def register(app: HttpApp, ctx: RouteContext) -> None:
    repository = ctx.repository

    def live(request: Request) -> Response:
        if repository.live:
            return json_response({"status": "live"})
        return json_response({"status": "broken: an op lost every instance and cannot restart it"}, 503)

    def ready(request: Request) -> Response:
        if repository.ready:
            return json_response({"status": "ready", "generation": repository.generation.number})
        return json_response({"status": "not ready"}, 503)

    for prefix in ("", "/v2"):
        app.add_url_rule(f"{prefix}/health/live", f"live{prefix}", live, methods=["GET"])
        app.add_url_rule(f"{prefix}/health/ready", f"ready{prefix}", ready, methods=["GET"])
