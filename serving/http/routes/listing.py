"""What is served: ``GET /pipelines`` (every route, version and op) and
``GET /<name>[/v<n>]/config`` (one pipeline's ops as configured)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def register(app: HttpApp, ctx: RouteContext) -> None:
    repository = ctx.repository

    def config(request: Request, name: str, version: int | None) -> Response:
        pipeline = repository.pipeline(name, version)
        return json_response(
            {
                "pipeline": pipeline.name,
                "version": pipeline.version,
                "generation": repository.generation.number,
                "input": pipeline.input_kind() or "image",
                "ops": pipeline.op_table(),
            }
        )

    def pipelines(request: Request) -> Response:
        return json_response(repository.listing())

    app.add_url_rule("/<name>/config", "config", config, methods=["GET"], defaults={"version": None})
    app.add_url_rule("/<name>/v<int:version>/config", "config_version", config, methods=["GET"])
    app.add_url_rule("/pipelines", "pipelines", pipelines, methods=["GET"])
