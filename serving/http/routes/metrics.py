"""``GET /metrics``: Prometheus' text format (on Ray, merged with the other replicas')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext

CONTENT_TYPE = "text/plain; version=0.0.4"


def register(app: HttpApp, ctx: RouteContext) -> None:
    render = ctx.metrics_text

    def metrics(request: Request) -> Response:
        return Response(render(), mimetype=CONTENT_TYPE)

    app.add_url_rule("/metrics", "metrics", metrics, methods=["GET"])
