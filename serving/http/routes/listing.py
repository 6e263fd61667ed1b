"""What is served: ``GET /pipelines`` (every route, version and op) and
``GET /<name>[/v<n>]/config`` (one pipeline's ops as configured)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response
from serving.http.routes.context import RouteContext

if TYPE_CHECKING:
    from serving.http.app import HttpApp


class ListingRoutes:
    def __init__(self, ctx: RouteContext):
        self.repository = ctx.repository

    def register(self, app: HttpApp) -> None:
        app.add_url_rule("/<name>/config", "config", self.config, methods=["GET"], defaults={"version": None})
        app.add_url_rule("/<name>/v<int:version>/config", "config_version", self.config, methods=["GET"])
        app.add_url_rule("/pipelines", "pipelines", self.pipelines, methods=["GET"])

    def config(self, request: Request, name: str, version: int | None) -> Response:
        pipeline = self.repository.pipeline(name, version)
        return json_response(
            {
                "pipeline": pipeline.name,
                "version": pipeline.version,
                "generation": self.repository.generation.number,
                "input": pipeline.input_kind() or "image",
                "ops": pipeline.op_table(),
            }
        )

    def pipelines(self, request: Request) -> Response:
        return json_response(self.repository.listing())


def register(app: HttpApp, ctx: RouteContext) -> None:
    ListingRoutes(ctx).register(app)
