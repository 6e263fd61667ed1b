"""A trivial app (parse the JSON body, answer its text's length) behind one HTTP
front, to measure what the front alone costs per request
(``python -m bench.http_fronts``). Project environment.

    python -m bench.peers.front_ceiling --front asyncio --port 8000
    POST /null {"text": "..."} -> {"length": n}

Fronts: ``waitress`` and ``asyncio`` (batchline's two, ``http.front``) around a raw
WSGI app; ``waitress_flask`` and ``asyncio_flask`` around the same in Flask;
``uvicorn_asgi``: the same as a raw ASGI app on uvicorn (httptools, uvloop), with no
worker thread at all: the ceiling of Python on an event loop; ``uvicorn_h11``: the same
on uvicorn's h11 protocol (the one that bounds a header); ``granian``: the raw WSGI app
on granian (a Rust HTTP server, hyper underneath; WSGI calls on its blocking threads).
"""

from __future__ import annotations

import argparse
import json
import threading
from typing import Any

from bench.peers.null_flask import create_app

FRONTS = ("waitress", "asyncio", "waitress_flask", "asyncio_flask", "uvicorn_asgi", "uvicorn_h11", "granian")
THREADS = 16


def _answer(body: bytes) -> bytes:
    return json.dumps({"length": len(json.loads(body)["text"])}).encode()


def wsgi_app(environ: dict, start_response: Any) -> list[bytes]:
    size = int(environ.get("CONTENT_LENGTH") or 0)
    out = _answer(environ["wsgi.input"].read(size))
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


async def asgi_app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    out = _answer(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


def serve_asyncio(app: Any, port: int) -> None:
    from serving.config.schema import HttpConf
    from serving.http.early_refusals import FrontGate
    from serving.http.http_server import HttpServer

    class Limited:  # what HttpServer reads of the app besides WSGI: its body limit
        body_limit = 1 << 20

        def __call__(self, environ: dict, start_response: Any) -> Any:
            return app(environ, start_response)

    front = HttpServer(Limited(), HttpConf(), FrontGate(), threads=THREADS, port=port)
    front.start()
    threading.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--front", choices=FRONTS, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if args.front.startswith("uvicorn"):
        import uvicorn

        http = "h11" if args.front == "uvicorn_h11" else "httptools"
        uvicorn.run(asgi_app, host="127.0.0.1", port=args.port, loop="uvloop", http=http, log_level="warning")
        return
    if args.front == "granian":
        from granian import Granian
        from granian.constants import Interfaces

        served = Granian(
            "bench.peers.front_ceiling:wsgi_app",
            port=args.port,
            interface=Interfaces.WSGI,
            blocking_threads=THREADS,
            log_enabled=False,
        )
        served.serve()
        return
    app = create_app() if args.front.endswith("_flask") else wsgi_app
    if args.front.startswith("asyncio"):
        serve_asyncio(app, args.port)
        return
    from waitress import serve

    serve(app, host="127.0.0.1", port=args.port, threads=THREADS, ident="ceiling")


if __name__ == "__main__":
    main()
