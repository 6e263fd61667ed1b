"""What is served: ``GET /pipelines`` (every route, version and op) and
``GET /<name>[/v<n>]/config`` (one pipeline's ops as configured)."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from serving.http.routes.context import RouteContext


class ListingRoutes:
    def __init__(self, ctx: RouteContext):
        self.repository = ctx.repository

    def register(self, app: Flask) -> None:
        app.add_url_rule("/<name>/config", "config", self.config, methods=["GET"])
        app.add_url_rule("/<name>/v<int:version>/config", "config_version", self.config_view, methods=["GET"])
        app.add_url_rule("/pipelines", "pipelines", self.pipelines, methods=["GET"])

    def config(self, name: str) -> Response:
        return self.config_view(name, None)

    def config_view(self, name: str, version: int | None) -> Response:
        pipeline = self.repository.pipeline(name, version)
        return jsonify(
            pipeline=pipeline.name,
            version=pipeline.version,
            generation=self.repository.generation.number,
            input=pipeline.input_kind() or "image",
            ops=pipeline.op_table(),
        )

    def pipelines(self) -> Response:
        return jsonify(self.repository.listing())


def register(app: Flask, ctx: RouteContext) -> None:
    ListingRoutes(ctx).register(app)
