"""``POST /admin/reload``: re-read the config sources and switch to them.
Who may call it (the admin token) is decided before, in ``serving.http.access``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.http.json_answer import json_response

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def register(app: HttpApp, ctx: RouteContext) -> None:
    repository = ctx.repository

    def reload(request: Request) -> Response:
        report = repository.reload()
        return json_response({"status": "reloaded", **report.as_dict()})

    app.add_url_rule("/admin/reload", "reload", reload, methods=["POST"])
