"""The probes, open to anyone (``serving.service.auth.OPEN_PATHS``), each also
under KServe's ``/v2`` prefix: live until an op lost every instance for good,
ready once every pipeline of the current generation is loaded and warm."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from serving.http.routes.context import RouteContext

Answer = Response | tuple[Response, int]


class HealthRoutes:
    def __init__(self, ctx: RouteContext):
        self.repository = ctx.repository

    def register(self, app: Flask) -> None:
        for prefix in ("", "/v2"):
            app.add_url_rule(f"{prefix}/health/live", "live", self.live, methods=["GET"])
            app.add_url_rule(f"{prefix}/health/ready", "ready", self.ready, methods=["GET"])

    def live(self) -> Answer:
        if self.repository.live:
            return jsonify(status="live")
        return jsonify(status="broken: an op lost every instance and cannot restart it"), 503

    def ready(self) -> Answer:
        if self.repository.ready:
            return jsonify(status="ready", generation=self.repository.generation.number)
        return jsonify(status="not ready"), 503


def register(app: Flask, ctx: RouteContext) -> None:
    HealthRoutes(ctx).register(app)
