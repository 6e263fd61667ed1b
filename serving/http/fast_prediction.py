"""Paddle Serving's prediction route for one text, answered on a front
process's event loop (:mod:`serving.http.asyncio_front`) instead of in a
worker thread through Flask.

In a front process a short text request is almost all overhead: the hand-off
to a worker thread, Flask's request and response objects, and a thread woken
again for the engine's answer cost several times what parsing it and handing
it to the engine over the link does. So ``POST /<name>/prediction`` (and
``/<name>/v<n>/prediction``) of a text pipeline with one input runs here, on
the loop, with the same code as the Flask route
(:class:`~serving.http.routes.prediction.PredictionRoutes`: the access check,
limits, parsing, admission and submission; the same waiting rules; the same
answer and error documents), and waits for the engine's answer without a
thread. Everything else (images, whose decoding would stall the loop, several
inputs, whose admission waits for the engine, every other route) is answered
by the app in a worker thread, as before: :meth:`FastPrediction.take` says
which. ``tests/integration/test_front_workers.py`` holds the answers of both
paths to the one-process server's, byte for byte."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import Any
from urllib.parse import unquote

from flask import Flask
from werkzeug.http import HTTP_STATUS_CODES

from serving.engine.request import RequestState
from serving.errors import ClientDisconnected, ServingError, as_serving_error
from serving.http.access import Access
from serving.http.error_body import error_document, error_headers
from serving.http.handler_count import HANDLERS, HandlerCount
from serving.http.jsonio import dumps
from serving.http.parse import parse_paddle
from serving.http.routes.prediction import PREDICTION_ROUTES, PredictionRoutes, paddle_document
from serving.http.routes.waiting import wait_for_results
from serving.http.wsgi_call import HttpAnswer, HttpRequest, first_header

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
    """What Flask's ``jsonify`` answers (this app's JSON: keys sorted, a final newline)."""
    body = dumps(doc, sort_keys=True) + b"\n"
    return HttpAnswer(
        f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN').upper()}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
        body,
    )


def error_answer(path: str, err: ServingError, authorization: str | None, logid: Any = None) -> HttpAnswer:
    """What the app's ``error_response`` answers."""
    return json_answer(err.status, error_document(path, err, logid), error_headers(err, authorization))


class FastPrediction:
    """The route on the loop; built from the app it stands in for."""

    def __init__(self, routes: PredictionRoutes, access: Access, handlers: HandlerCount):
        self.routes = routes
        self.access = access
        self.handlers = handlers

    @classmethod
    def of(cls, app: Flask) -> FastPrediction:
        ext = app.extensions
        return cls(ext[PREDICTION_ROUTES], ext["batchline.access"], ext[HANDLERS])

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
            pipeline = self.routes.repository.pipeline(name, version)
        except ServingError:
            return None  # the app's 404 (and its access check first)
        if pipeline.input_kind() != "text":
            return None
        return self._answer(request, path, name, version)

    async def _answer(self, request: HttpRequest, path: str, name: str, version: int | None) -> HttpAnswer | None:
        headers = HeaderView(request.headers)
        authorization = headers.get("Authorization")
        # the order and the answers of the app: its access check, then the route
        with self.handlers:
            try:
                self.access.check(RequestFacts(path, headers), page_file=False)
                # the body's own length, as the app's environ gives it (a chunked body's too)
                pipeline, limits = self.routes.target(name, version, len(request.body))
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
                key = self.routes.route_key(name, version, headers.get)
                handles, reservation = self.routes.start(name, version, parsed, pipeline, limits, key)
                try:
                    await settled(handles, limits.wait_slice_s, request.disconnected)
                    wait_for_results(handles, limits.wait_slice_s, request.disconnected)  # settled: no wait
                finally:
                    reservation.release()
                return json_answer(200, paddle_document(handles, parsed.logid))
            except ServingError as err:
                return error_answer(path, err, authorization, parsed.logid)
            except Exception as exc:
                log.exception("unhandled error on %s", path)
                return error_answer(path, as_serving_error(exc), authorization)


async def settled(handles: Sequence[RequestState], wait_slice_s: float, disconnected: Callable[[], bool]) -> None:
    """Return once every handle has its outcome, its deadline passed, or the client is gone
    (then they all fail, as the app's wait fails them). One future and one timer per request:
    the handles complete in the link's (or the engine's) thread, the timer looks at the
    client and the deadline every ``wait_slice_s``."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()
    pending = [len(handles)]
    timer: asyncio.TimerHandle | None = None

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    def one_more() -> None:  # on the loop
        pending[0] -= 1
        if pending[0] == 0:
            wake()

    def from_elsewhere(_handle: RequestState) -> None:
        loop.call_soon_threadsafe(one_more)

    def look() -> None:  # on the loop, every slice until woken
        nonlocal timer
        if woken.done():
            return
        if disconnected():
            for handle in handles:  # as the app's wait does: nothing more is computed for them
                handle.fail(ClientDisconnected("client closed the connection"))
            wake()
        elif max(h.remaining() for h in handles) <= 0:
            wake()
        else:
            timer = loop.call_later(next_look(), look)

    def next_look() -> float:  # a slice, or the last deadline if that comes sooner
        return max(0.0, min(wait_slice_s, max(h.remaining() for h in handles)))

    for handle in handles:
        handle.add_done_callback(from_elsewhere)
    timer = loop.call_later(next_look(), look)
    try:
        await woken
    finally:
        timer.cancel()  # the last one set
