"""``POST /admin/reload``: re-read the config sources and switch to them.
Who may call it (the admin token) is decided before, in ``serving.http.access``."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from serving.http.routes.context import RouteContext


def register(app: Flask, ctx: RouteContext) -> None:
    repository = ctx.repository

    def reload() -> Response:
        report = repository.reload()
        return jsonify(status="reloaded", **report.as_dict())

    app.add_url_rule("/admin/reload", "reload", reload, methods=["POST"])
