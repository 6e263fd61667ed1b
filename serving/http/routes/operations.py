"""The server's own routes, beside the predictions:

* the probes, open to anyone (``serving.service.auth.OPEN_PATHS``), also under KServe's
  ``/v2`` prefix: live until an op lost every instance for good, ready once every pipeline
  of the current generation is loaded and warm;
* what is served: ``GET /pipelines`` and ``GET /<name>[/v<n>]/config``;
* ``GET /metrics``, Prometheus' text format (on Ray, merged with the other replicas');
* ``POST /admin/reload``: re-read the config sources and switch to them (who may call it,
  the admin token, is decided before, in ``serving.http.access``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4"


def register(app: HttpApp, ctx: RouteContext) -> None:
    repository = ctx.repository
    render = ctx.metrics_text

    def live(request: Request) -> Response:
        if repository.live:
            return json_response({"status": "live"})
        return json_response({"status": "broken: an op lost every instance and cannot restart it"}, 503)

    def ready(request: Request) -> Response:
        if repository.ready:
            return json_response({"status": "ready", "generation": repository.generation.number})
        return json_response({"status": "not ready"}, 503)

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

    def metrics(request: Request) -> Response:
        return Response(render(), mimetype=METRICS_CONTENT_TYPE)

    def reload(request: Request) -> Response:
        report = repository.reload()
        return json_response({"status": "reloaded", **report.as_dict()})

    for prefix in ("", "/v2"):
        app.add_url_rule(f"{prefix}/health/live", f"live{prefix}", live, methods=["GET"])
        app.add_url_rule(f"{prefix}/health/ready", f"ready{prefix}", ready, methods=["GET"])
    app.add_url_rule("/<name>/config", "config", config, methods=["GET"], defaults={"version": None})
    app.add_url_rule("/<name>/v<int:version>/config", "config_version", config, methods=["GET"])
    app.add_url_rule("/pipelines", "pipelines", pipelines, methods=["GET"])
    app.add_url_rule("/metrics", "metrics", metrics, methods=["GET"])
    app.add_url_rule("/admin/reload", "reload", reload, methods=["POST"])
