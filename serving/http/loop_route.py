"""Paddle Serving's prediction route for one text, called on a front
process's event loop (:mod:`serving.http.asyncio_front`) instead of in a
worker thread through the app: the same request core
(:mod:`serving.service.core`), the same access check, parser, answer and
error documents as the app's route, awaited instead of waited for.

In a front process a short text request is almost all overhead: the hand-off
to a worker thread, the app's request and response objects, and a thread woken
again for the engine's answer cost several times what parsing it and handing
it to the engine over the link does. Everything else (images, whose decoding
would stall the loop, several inputs, whose admission waits for the engine,
every other route) is answered by the app in a worker thread:
:meth:`LoopRoute.take` says which. ``tests/integration/test_front_workers.py``
holds the answers of both to the one-process server's, byte for byte."""

from __future__ import annotations

import logging
import re
from collections.abc import Coroutine, Sequence
from typing import Any
from urllib.parse import unquote

from werkzeug.http import HTTP_STATUS_CODES

from serving.errors import ServingError, as_serving_error
from serving.http.access import Access
from serving.http.json_answer import json_body
from serving.http.wsgi_call import HttpAnswer, HttpRequest, first_header
from serving.service.core import RequestCore, paddle_document
from serving.service.error_body import error_document, error_headers
from serving.service.parse import parse_paddle

log = logging.getLogger(__name__)

PADDLE_ROUTE = re.compile(r"/([^/]+)/(?:v(\d+)/)?prediction")


class HeaderView:
    """Case-insensitive lookup over a request's raw headers (what :class:`Access` reads)."""

    def __init__(self, headers: Sequence[tuple[bytes, bytes]]):
        self._headers = headers

    def get(self, key: str, /) -> str | None:
        value = first_header(self._headers, key.lower().encode("latin-1"))
        return None if value is None else value.decode("latin-1").strip()


class RequestFacts:
    """The request as the access check sees it."""

    scheme = "http"

    def __init__(self, path: str, headers: HeaderView):
        self.path = path
        self.headers = headers


def json_answer(status: int, doc: Any, headers: Sequence[tuple[str, str]] = ()) -> HttpAnswer:
    """What the app's JSON answers are (:mod:`serving.http.json_answer`), as the front writes them."""
    body = json_body(doc)
    return HttpAnswer(
        f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN').upper()}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
        body,
    )


def error_answer(path: str, err: ServingError, authorization: str | None, logid: Any = None) -> HttpAnswer:
    """What the app's ``error_response`` answers."""
    return json_answer(err.status, error_document(path, err, logid), error_headers(err, authorization))


class LoopRoute:
    """The route on the loop, over the request core the app's route calls too."""

    def __init__(self, core: RequestCore, access: Access):
        self.core = core
        self.access = access

    def take(self, request: HttpRequest) -> Coroutine[Any, Any, HttpAnswer | None] | None:
        """The coroutine that answers ``request`` on the loop (None when it returns None:
        left to the app after all), or None: the app answers it."""
        if request.method != "POST":
            return None
        path = unquote(request.target.split(b"?", 1)[0].decode("latin-1"), encoding="latin-1")
        match = PADDLE_ROUTE.fullmatch(path)
        if match is None:
            return None
        name, version = match.group(1), int(match.group(2)) if match.group(2) else None
        try:
            pipeline = self.core.repository.pipeline(name, version)
        except ServingError:
            return None  # the app's 404 (and its access check first)
        if pipeline.input_kind() != "text":
            return None
        return self._answer(request, path, name, version)

    async def _answer(self, request: HttpRequest, path: str, name: str, version: int | None) -> HttpAnswer | None:
        headers = HeaderView(request.headers)
        authorization = headers.get("Authorization")
        # the order and the answers of the app: its access check, then the route
        core = self.core
        with core.handlers:
            try:
                self.access.check(RequestFacts(path, headers), page_file=False)
                # the body's own length, as the app's environ gives it (a chunked body's too)
                target = core.target(name, version, len(request.body))
                pipeline, limits = target
                parsed = parse_paddle(
                    request.body,
                    kind="text",
                    max_inputs=limits.max_inputs,
                    priority_levels=pipeline.config.dag.priority_levels,
                )
            except ServingError as err:
                return error_answer(path, err, authorization)
            except Exception as exc:
                log.exception("unhandled error on %s", path)
                return error_answer(path, as_serving_error(exc), authorization)
            if len(parsed.inputs) != 1:
                return None  # to the app: the admission of several waits for the engine's answer
            try:
                started = core.start(name, version, parsed, target, core.route_key(name, version, headers.get))
                handles = await started.settle(request.disconnected)
                return json_answer(200, paddle_document(handles, parsed.logid))
            except ServingError as err:
                return error_answer(path, err, authorization, parsed.logid)
            except Exception as exc:
                log.exception("unhandled error on %s", path)
                return error_answer(path, as_serving_error(exc), authorization)
