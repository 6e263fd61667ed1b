"""The JSON answer of every failure, with its real status: a ServingError as it is,
werkzeug's HTTP errors (413 naming the limit, 404 naming the pipelines) and anything
unexpected as a 500."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Request, Response

from serving.errors import NotFound, ServingError, error_for_status
from serving.http.json_answer import json_response
from serving.service.error_body import body_over_limit, error_document, error_headers

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def error_response(request: Request, err: ServingError, logid: Any = None) -> Response:
    """``err``'s answer to ``request``: its body for this route's protocol, status and headers."""
    resp = json_response(error_document(request.path, err, logid), err.status)
    resp.headers.extend(error_headers(err, request.headers.get("Authorization")))
    return resp


def register(app: HttpApp, ctx: RouteContext) -> None:
    repository = ctx.repository

    def http_error(request: Request, exc: HTTPException) -> Response:
        if exc.code == 413 and app.body_limit is not None:
            err: ServingError = body_over_limit(app.body_limit)
        elif exc.code == 404:  # naming the pipelines served now
            names = ", ".join(sorted(repository.config.routes))
            err = NotFound(f"no route {request.path[:128]!r}; pipelines: {names} (GET /pipelines lists them)")
        else:
            err = error_for_status(exc.code or 500, exc.description or exc.name)
        return error_response(request, err)

    app.serving_error = error_response
    app.http_error = http_error
