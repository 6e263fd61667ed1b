"""Runs the WSGI app for a request Ray's proxy hands an ingress replica (ASGI), in a thread pool."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from werkzeug.test import EnvironBuilder

from serving.http.wsgi_call import CLIENT_GONE, call_app

# set by the response itself (Starlette computes the length of the body it sends)
_DROPPED = frozenset({"content-length", "transfer-encoding", "connection"})
# set from the body as read: a chunked request's Transfer-Encoding would make Werkzeug read nothing
_BODY_HEADERS = frozenset({"content-length", "content-type", "transfer-encoding"})


def app_path(scope: Mapping[str, Any]) -> str:
    """The request's path as the app sees it: without the route prefix (the script root)."""
    root = scope.get("root_path", "") or ""
    path = scope.get("path", "/")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return str(path)


def wsgi_environ(request: Request, body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI request; a route prefix becomes the script root."""
    root = request.scope.get("root_path", "") or ""
    path = app_path(request.scope)
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _BODY_HEADERS]
    host = request.headers.get("host", "localhost")
    builder = EnvironBuilder(
        path=path,
        base_url=f"{request.url.scheme}://{host}{root}",
        query_string=request.url.query,
        method=request.method,
        headers=headers,
        data=body,
        content_type=request.headers.get("content-type"),
        environ_base={"REMOTE_ADDR": request.client.host if request.client else ""},
    )
    try:
        return builder.get_environ()
    finally:
        builder.close()


def run_app(app: Any, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    answer = call_app(app, environ)
    return int(answer.status.split(" ", 1)[0]), answer.headers, answer.body


async def call_wsgi(
    app: Any, request: Request, body: bytes, pool: Executor, done: Callable[[], None] = lambda: None
) -> Response:
    """The app's answer to ``request``, whose ``body`` the caller has read.

    ``done`` is called once the app no longer holds ``body``: answered, failed, or (for a
    cancelled call) once its thread let go, not at the cancellation itself."""
    try:
        environ = wsgi_environ(request, body)
        # Ray cancels this call when the client goes away; the app's handlers poll this hook
        gone = threading.Event()
        environ[CLIENT_GONE] = gone.is_set
        work = pool.submit(run_app, app, environ)
    except BaseException:
        done()
        raise
    work.add_done_callback(lambda _: done())
    try:
        status, headers, content = await asyncio.wrap_future(work)
    except asyncio.CancelledError:
        gone.set()
        raise
    response = Response(content, status_code=status)
    for name, value in headers:
        if name.lower() in _DROPPED:
            continue
        if name.lower() == "content-type":
            response.headers["content-type"] = value
        else:
            response.headers.append(name, value)
    return response
