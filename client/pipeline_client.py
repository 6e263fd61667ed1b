"""Python client for a batchline server (and Paddle Serving pipeline servers).

    from client.pipeline_client import PipelineClient, PipelineError

    with PipelineClient("http://127.0.0.1:9999") as c:
        lines = c.predict("ocr", image="card.jpg")[0]   # [{"text", "score", "box"}, ...]
        label = c.predict("ernie", text="很好")[0]       # {"label", "score", "probs"}
        c.predict("ocr", image="card.jpg", version=2)    # one version: /ocr/v2/prediction
        c.predict("ocr", image="card.jpg", route_key="user-7")  # the same key, the same version
        c.pipelines()["generation"]                       # GET /pipelines
        c.pipeline_names()                                # ["ernie", "ocr"]: each pipeline once

    # the same answers over the other protocols (client/protocols.py); gRPC ones on the server's rpc_port
    with PipelineClient("http://127.0.0.1:9999", rpc_url="127.0.0.1:9998") as c:
        c.predict("ernie", text="很好", protocol="grpc")     # Paddle Serving's PipelineService
        c.predict("ernie", text="很好", protocol="v2")       # Open Inference Protocol, HTTP
        c.predict("ernie", text="很好", protocol="v2-grpc")  # Open Inference Protocol, gRPC

A server running several pipelines routes ``/{name}/prediction`` among the
versions of ``name`` (A/B weights), sticky per route key: the ``X-Route-Key``
header by default (a route may name another header, ``route_header``), else
the request's ``logid`` (0, Paddle clients' default, is no key).

Every failure raises :class:`PipelineError` carrying the HTTP status (``0``
when no HTTP answer arrived: connection refused, reset or client timeout), the
server's message and ``Retry-After`` (seconds) when the server sent one; over
gRPC, the HTTP status the same request gets over HTTP (client/grpc_calls.py).

Thread-safety: one client may be shared between threads (its connection pool
holds ``pool_size`` kept-alive connections; more threads open extra ones); load
tests still create one client per thread, as ``batchline bench`` does. The
transport is kept-alive ``http.client`` connections (client/transport.py), not
``requests``, whose Python cost per call was larger than the server's own work
on a small request.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Iterable
from typing import Any, Union
from urllib.parse import urlsplit

from .answers import PipelineError, answer_error, parse_value
from .protocols import HTTP_PROTOCOLS, Front, check_protocol, open_front, prepare
from .request_body import PROTOCOLS, RequestBody, encode_request, json_body, make_payload, route
from .transport import Answer, Transport, TransportError

ImageLike = Union[bytes, bytearray, str, "os.PathLike[str]", Any]  # Any: numpy array / PIL image
__all__ = ["PROTOCOLS", "PipelineClient", "PipelineError", "RequestBody", "encode_request", "make_payload"]
# the header a batchline route reads its sticky key from unless its config names another (routing.key_header)
ROUTE_HEADER = "X-Route-Key"


def image_bytes(image: ImageLike) -> bytes:
    """Encoded image bytes from bytes, a file path, a numpy BGR array or a PIL image.

    Arrays and PIL images are encoded to PNG (lossless, so the server sees the
    same pixels).
    """
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    if isinstance(image, (str, os.PathLike)):
        with open(image, "rb") as f:
            return f.read()
    if hasattr(image, "shape") and hasattr(image, "dtype"):
        import cv2  # lazy: only needed for arrays

        ok, buf = cv2.imencode(".png", image)
        if not ok:
            raise ValueError(f"could not encode array of shape {image.shape} as PNG")
        return buf.tobytes()
    if hasattr(image, "save") and hasattr(image, "mode"):
        import io

        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()
    raise TypeError(
        f"unsupported image type {type(image).__name__}: pass bytes, a path, a numpy BGR array or a PIL image"
    )


def _check(resp: Answer) -> Any:
    """The JSON body of a 200 answer; PipelineError for any other status or a non-JSON body."""
    if resp.status_code != 200:
        raise answer_error(resp)
    try:
        return resp.json()
    except ValueError as e:
        raise PipelineError(resp.status_code, f"response is not JSON: {resp.text[:200]!r}", body=resp.text) from e


def prediction_answer(resp: Answer, protocol: str) -> dict:
    """The answer dict of a prediction request, or PipelineError.

    A non-200 status raises with the server's message and ``Retry-After``. So
    does a Paddle answer with ``err_no != 0`` even under HTTP 200: a batchline
    server never answers that way (every failure carries its real status), but
    Paddle Serving's own pipeline servers do, and this client talks to them too.
    """
    body = _check(resp)
    if not isinstance(body, dict):
        raise PipelineError(200, f"unexpected answer: {str(body)[:200]}", body=str(body))
    if protocol == "paddle" and body.get("err_no", 0) != 0:
        raise PipelineError(200, str(body.get("err_msg") or f"err_no={body['err_no']}"), body=json.dumps(body))
    return body


class PipelineClient:
    """HTTP client for ``/{name}/prediction`` (Paddle Serving) and ``/{name}/predict``
    (native: JSON, or ``binary`` uploads without base64; see client/request_body.py),
    and for the other protocols' predictions (:meth:`results`; gRPC ones at ``rpc_url``,
    ``HOST:PORT``)."""

    def __init__(
        self,
        url: str,
        timeout: float = 30.0,
        token: str | None = None,
        pool_size: int = 64,
        rpc_url: str | None = None,
    ):
        if "://" not in url:
            url = "http://" + url
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._logids = itertools.count()
        base = urlsplit(self.url)
        self._prefix = base.path  # a server mounted under a path
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._transport = Transport(f"{base.scheme}://{base.netloc}", pool_size=pool_size, headers=headers)
        self._token = token
        self.rpc_url = rpc_url
        self._fronts: dict[str, Front] = {}  # the other protocols', opened on first use
        self._fronts_lock = threading.Lock()

    # ------------------------------------------------------------------ plumbing
    def _request(
        self,
        method: str,
        path: str,
        *,
        body: RequestBody | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """``body`` (already encoded) is sent as it is."""
        data = None
        if body is not None:
            data = body.data
            headers = {**(headers or {}), "Content-Type": body.content_type}
            if body.query:
                path = f"{path}?{body.query}"
        path = self._prefix + path
        try:
            return self._transport.request(method, path, body=data, headers=headers, timeout=self.timeout)
        except TransportError as e:
            raise PipelineError(0, str(e)) from e

    # ------------------------------------------------------------------ prediction
    def predict_raw(
        self,
        name: str,
        payload: dict[str, Any],
        protocol: str = "paddle",
        *,
        version: int | None = None,
        route_key: str | None = None,
        route_header: str = ROUTE_HEADER,
    ) -> dict:
        """POST a ready-made JSON ``payload``; return the answer dict.

        ``version`` posts to ``/{name}/v{version}/...`` (that version only, no
        routing); ``route_key`` is sent in the ``route_header`` header so that
        routed requests with one key reach one version.
        Raises PipelineError on a non-200 status or (paddle protocol) ``err_no != 0``.
        """
        if protocol == "binary":
            raise ValueError("predict_raw posts a JSON payload: for the binary protocol use send(encode_request(...))")
        body = RequestBody(json_body(payload), "application/json")
        return self.send(name, body, protocol, version=version, route_key=route_key, route_header=route_header)

    def send(
        self,
        name: str,
        body: RequestBody,
        protocol: str = "paddle",
        *,
        version: int | None = None,
        route_key: str | None = None,
        route_header: str = ROUTE_HEADER,
    ) -> dict:
        """POST a request encoded by :func:`~client.request_body.encode_request` (once, e.g.
        before a load test); return the answer dict, as :meth:`predict_raw` does."""
        path = prediction_path(name, protocol, version)
        headers = {} if route_key is None else {route_header: str(route_key)}
        return prediction_answer(self._request("POST", path, body=body, headers=headers), protocol)

    def predict(
        self,
        name: str,
        *,
        image: ImageLike | None = None,
        images: Iterable[ImageLike] | None = None,
        text: str | None = None,
        texts: Iterable[str] | None = None,
        priority: int | None = None,
        timeout_ms: int | None = None,
        protocol: str = "paddle",
        version: int | None = None,
        route_key: str | None = None,
        route_header: str = ROUTE_HEADER,
    ) -> list[Any]:
        """Send images then texts in one request; return one parsed result per input, in order.

        ``protocol``: any of client/protocols.py (``grpc`` and ``v2-grpc`` need ``rpc_url``);
        ``version``: that version of ``name`` only; ``route_key``: a sticky
        routing key (see :meth:`predict_raw`)."""
        inputs = build_inputs(image=image, images=images, text=text, texts=texts)
        request = prepare(inputs, protocol, priority=priority, timeout_ms=timeout_ms, logid=next(self._logids))
        return self.results(name, request, protocol, version=version, route_key=route_key, route_header=route_header)

    def results(
        self,
        name: str,
        request: Any,
        protocol: str = "paddle",
        *,
        version: int | None = None,
        route_key: str | None = None,
        route_header: str = ROUTE_HEADER,
    ) -> list[Any]:
        """Send a request :func:`~client.protocols.prepare` encoded for ``protocol`` (once, e.g.
        before a load test); return one parsed result per input, whatever the protocol."""
        if protocol not in HTTP_PROTOCOLS:
            front = self._front(protocol)
            return front.results(name, request, version=version, route_key=route_key, route_header=route_header)
        body = self.send(name, request, protocol, version=version, route_key=route_key, route_header=route_header)
        if protocol != "paddle":
            results = body.get("results")
            if not isinstance(results, list):
                raise PipelineError(200, "answer has no 'results' list", body=json.dumps(body))
            return results
        return [parse_value(v) for v in body.get("value", [])]

    def _front(self, protocol: str) -> Front:
        check_protocol(protocol)
        with self._fronts_lock:
            front = self._fronts.get(protocol)
            if front is None:
                front = open_front(
                    protocol, http_request=self._request, rpc_url=self.rpc_url, timeout=self.timeout, token=self._token
                )
                self._fronts[protocol] = front
        return front

    # ------------------------------------------------------------------ admin
    def health_live(self) -> bool:
        return self._health("/health/live")

    def health_ready(self) -> bool:
        """True when ``/health/ready`` answers 200; False on 503 or when unreachable."""
        return self._health("/health/ready")

    def _health(self, path: str) -> bool:
        try:
            return self._request("GET", path).status_code == 200
        except PipelineError:
            return False

    def metrics_text(self) -> str:
        resp = self._request("GET", "/metrics")
        if resp.status_code != 200:
            raise answer_error(resp)
        return resp.text

    def config(self, name: str, version: int | None = None) -> list[dict]:
        """The resolved op table of pipeline ``name`` (its default version, or ``version``)."""
        body = self.describe(name, version)
        if isinstance(body, dict) and isinstance(body.get("ops"), list):
            return body["ops"]
        return body

    def describe(self, name: str, version: int | None = None) -> Any:
        """The whole ``/{name}/config`` answer: ``pipeline``, ``version``, ``generation``, ``input``, ``ops``."""
        return _check(self._request("GET", f"{_base(name, version)}/config"))

    def pipelines(self) -> dict:
        """``GET /pipelines``: the generation, every pipeline version (state, default, weight,
        shadow, ops), the routes and the shared ops."""
        return _json_object(_check(self._request("GET", "/pipelines")))

    def pipeline_names(self) -> list[str]:
        """The names of the pipelines the server runs (``GET /pipelines``), each once, in its order."""
        entries = self.pipelines().get("pipelines")
        if not isinstance(entries, list):
            raise PipelineError(200, "answer has no 'pipelines' list", body=str(entries)[:200])
        names = (entry.get("name") for entry in entries if isinstance(entry, dict))
        return list(dict.fromkeys(name for name in names if isinstance(name, str)))

    def reload(self, admin_token: str | None = None) -> dict:
        """``POST /admin/reload`` with the server's admin token (``admin_token`` /
        ``$BATCHLINE_ADMIN_TOKEN`` there; the prediction token does not work):
        re-read the configs. ``admin_token`` is sent instead of the client's token.

        Returns the report (``generation``, ``added``, ``changed``, ``removed``,
        ``unchanged``); raises PipelineError with the status on failure (403: the
        server has no admin token, 401: wrong token, 422: invalid config, nothing
        changed, 409: a reload is already running)."""
        headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else None
        return _json_object(_check(self._request("POST", "/admin/reload", headers=headers)))

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self._transport.close()
        with self._fronts_lock:
            fronts, self._fronts = self._fronts, {}
        for front in fronts.values():
            front.close()

    def __enter__(self) -> PipelineClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _base(name: str, version: int | None) -> str:
    """``/{name}``, or ``/{name}/v{version}`` for one version."""
    if version is None:
        return f"/{name}"
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be an int >= 1, got {version!r}")
    return f"/{name}/v{version}"


def prediction_path(name: str, protocol: str = "paddle", version: int | None = None) -> str:
    """The prediction path: ``/{name}/prediction`` (paddle) or ``/predict`` (native), under ``/v{version}`` if given."""
    return f"{_base(name, version)}/{route(protocol)}"


def _json_object(body: Any) -> dict:
    if not isinstance(body, dict):
        raise PipelineError(200, f"unexpected answer: {str(body)[:200]}", body=str(body))
    return body


def build_inputs(*, image=None, images=None, text=None, texts=None) -> list[tuple]:
    """``[("image", bytes), ..., ("text", str), ...]``: images first, then texts."""
    imgs: list[Any] = ([image] if image is not None else []) + list(images or [])
    txts: list[str] = ([text] if text is not None else []) + list(texts or [])
    if not imgs and not txts:
        raise ValueError("nothing to send: give image(s) and/or text(s)")
    return [("image", image_bytes(i)) for i in imgs] + [("text", str(t)) for t in txts]
