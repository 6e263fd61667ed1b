"""The JSON answer of every failure, with its real status: a ServingError as
it is, werkzeug's HTTP errors (413 naming the limit, 404 naming the
pipelines) and anything unexpected as a 500."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from serving.errors import NotFound, ServingError, as_serving_error, error_for_status
from serving.http.routes.context import RouteContext
from serving.service.error_body import body_over_limit, error_document, error_headers

log = logging.getLogger(__name__)


def error_response(err: ServingError, logid: Any = None) -> Response:
    """``err``'s answer to the current request: its body for this route's protocol, status and headers."""
    resp = jsonify(error_document(request.path, err, logid))
    resp.status_code = err.status
    resp.headers.extend(error_headers(err, request.headers.get("Authorization")))
    return resp


class ErrorAnswers:
    """The app-wide error handlers; the 404 names the pipelines served now."""

    def __init__(self, ctx: RouteContext):
        self.repository = ctx.repository

    def register(self, app: Flask) -> None:
        app.register_error_handler(ServingError, self.serving_error)
        app.register_error_handler(HTTPException, self.http_error)
        app.register_error_handler(Exception, self.unexpected)

    def serving_error(self, err: ServingError) -> Response:
        return error_response(err)

    def http_error(self, exc: HTTPException) -> Response:
        if exc.code == 413:
            err: ServingError = body_over_limit(current_app.config["MAX_CONTENT_LENGTH"])
        elif exc.code == 404:
            names = ", ".join(sorted(self.repository.config.routes))
            err = NotFound(f"no route {request.path[:128]!r}; pipelines: {names} (GET /pipelines lists them)")
        else:
            err = error_for_status(exc.code or 500, exc.description or exc.name)
        return error_response(err)

    def unexpected(self, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.path)
        return error_response(as_serving_error(exc))


def register(app: Flask, ctx: RouteContext) -> None:
    ErrorAnswers(ctx).register(app)
