"""The Ray ingress (:class:`serving.rayserve.ingress.Ingress`) driven as Ray Serve's
proxy drives it, without Ray: over fake op deployments (:mod:`tests.support.ray_fakes`),
through Starlette's TestClient, or one ASGI request at a time with a body the test
hands out chunk by chunk (:class:`Body`).

    with RayApps() as make:
        app = make([document("p", split_add())])
        app.client.post(...)                       # over HTTP
        call(app, "/p/predict", Body([b"7 3"]), [])  # one request, its body pulled as the test says
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.testclient import TestClient

from serving.config.documents import ConfigDocument
from serving.rayserve.ingress import Ingress
from tests.support.ray_fakes import FakeCluster, as_dicts


def asgi(ingress: Ingress) -> Any:
    """The ingress as Ray Serve's proxy drives it: one Starlette request in, one response out."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        response = await ingress(Request(scope, receive))
        await response(scope, receive, send)

    return app


class RayApp:
    """An ingress over fake op deployments for ``documents``, and a client for it."""

    def __init__(
        self,
        documents: list[ConfigDocument],
        *,
        root_path: str = "",
        replace: dict[str, Any] | None = None,
        http_host: str | None = None,
        status: Any = None,
    ):
        self.cluster = FakeCluster(documents)
        try:
            self.handles = {**self.cluster.handles, **(replace or {})}
            self.ingress = Ingress(
                as_dicts(documents),
                self.handles,
                None,
                status=status or self.cluster.status,
                app="test",
                http_host=http_host,
            )
        except BaseException:
            self.cluster.close()
            raise
        self.client = TestClient(asgi(self.ingress), root_path=root_path)

    def close(self) -> None:
        self.ingress.__del__()
        self.cluster.close()


class RayApps:
    """Makes :class:`RayApp` s and closes every one on exit (a fixture's body)."""

    def __init__(self) -> None:
        self._made: list[RayApp] = []

    def __enter__(self) -> Callable[..., RayApp]:
        def make(documents: list[ConfigDocument], **kwargs: Any) -> RayApp:
            self._made.append(RayApp(documents, **kwargs))
            return self._made[-1]

        return make

    def __exit__(self, *exc: Any) -> None:
        for app in self._made:
            app.close()


def scope(path: str, root_path: str = "", query: bytes = b"", headers=()) -> dict[str, Any]:
    """The ASGI scope of a POST to ``path`` as Ray's proxy passes it."""
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "root_path": root_path,
        "query_string": query,
        "headers": [(b"host", b"example.org:8000"), *headers],
        "scheme": "http",
        "server": ("example.org", 8000),
        "client": ("10.0.0.7", 5555),
    }


class Body:
    """An ASGI ``receive`` that hands out ``chunks`` one message each and counts what was pulled.
    ``on_pull`` runs before each message is handed out (to look at the ingress meanwhile);
    ``disconnect``: after the chunks the client is gone instead of the body ending."""

    def __init__(
        self, chunks: Iterable[bytes], *, on_pull: Callable[[], None] = lambda: None, disconnect: bool = False
    ):
        self._chunks = iter(chunks)
        self._on_pull = on_pull
        self._disconnect = disconnect
        self.pulled = 0  # messages
        self.bytes = 0

    async def __call__(self) -> dict[str, Any]:
        self._on_pull()
        chunk = next(self._chunks, None)
        if chunk is None:
            if self._disconnect:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": b"", "more_body": False}
        self.pulled += 1
        self.bytes += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}


def request(path: str, body: Body, headers: list[tuple[bytes, bytes]]) -> Request:
    """A POST of ``body`` to ``path`` (text/plain), as Ray's proxy hands it over."""
    return Request(scope(path, headers=[(b"content-type", b"text/plain"), *headers]), body)


def call(app: RayApp, path: str, body: Body, headers: list[tuple[bytes, bytes]]) -> Any:
    """The ingress's answer to a POST of ``body`` to ``path``, as Ray's proxy hands it over."""
    return asyncio.run(app.ingress(request(path, body, headers)))


def isolate(tmp_path: Any, monkeypatch: Any) -> None:
    """No token from the environment; replicas' node-wide CPU claims in a file of the test's own
    (an ingress test module's autouse fixture)."""
    import tempfile

    for var in ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
