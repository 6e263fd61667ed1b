"""The probes, open to anyone (``serving.service.auth.OPEN_PATHS``), each also
under KServe's ``/v2`` prefix: live until an op lost every instance for good,
ready once every pipeline of the current generation is loaded and warm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response
from serving.http.routes.context import RouteContext

if TYPE_CHECKING:
    from serving.http.app import HttpApp


class HealthRoutes:
    def __init__(self, ctx: RouteContext):
        self.repository = ctx.repository

    def register(self, app: HttpApp) -> None:
        for prefix in ("", "/v2"):
            app.add_url_rule(f"{prefix}/health/live", f"live{prefix}", self.live, methods=["GET"])
            app.add_url_rule(f"{prefix}/health/ready", f"ready{prefix}", self.ready, methods=["GET"])

    def live(self, request: Request) -> Response:
        if self.repository.live:
            return json_response({"status": "live"})
        return json_response({"status": "broken: an op lost every instance and cannot restart it"}, 503)

    def ready(self, request: Request) -> Response:
        if self.repository.ready:
            return json_response({"status": "ready", "generation": self.repository.generation.number})
        return json_response({"status": "not ready"}, 503)


def register(app: HttpApp, ctx: RouteContext) -> None:
    HealthRoutes(ctx).register(app)
