"""The JSON body and headers of a failed request, for every layer that answers one (the
app, the HTTP fronts, the Ray ingress): Paddle Serving's shape on ``.../prediction``,
KServe's ``{"error": "<message>"}`` on the Open Inference routes, else ``{"error":
{"status", "message"}}``."""

from __future__ import annotations

from typing import Any

from serving.errors import PayloadTooLarge, ServingError, Unauthorized
from serving.service.auth import challenge


def is_paddle_route(path: str) -> bool:
    """Whether ``path`` is a Paddle Serving compatible route (its errors use that shape)."""
    return path.endswith("/prediction")


def is_inference_protocol_route(path: str) -> bool:
    """Whether ``path`` is an Open Inference Protocol route (KServe v2: its errors are ``{"error": "<message>"}``)."""
    # not every /v2/...: a pipeline may be called "v2" (its /v2/predict answers the native shape)
    return path == "/v2" or path.startswith(("/v2/models/", "/v2/health/"))


def error_document(path: str, err: ServingError, logid: Any = None) -> dict[str, Any]:
    """What a request to ``path`` that failed with ``err`` gets as its JSON body."""
    if is_paddle_route(path):
        return {"err_no": err.err_no, "err_msg": err.message, "key": [], "value": [], "logid": logid}
    if is_inference_protocol_route(path):
        return {"error": err.message}
    return {"error": {"status": err.status, "message": err.message}}


def error_headers(err: ServingError, authorization: str | None) -> list[tuple[str, str]]:
    """The headers of ``err``'s answer: ``WWW-Authenticate`` on a 401 (given the
    request's ``Authorization``), ``Retry-After`` in whole seconds when it says when."""
    headers = []
    if isinstance(err, Unauthorized):
        headers.append(("WWW-Authenticate", challenge(authorization)))
    if err.retry_after is not None:
        headers.append(("Retry-After", str(max(1, int(round(err.retry_after))))))
    return headers


def body_over_limit(limit: int) -> PayloadTooLarge:
    """The 413 of a body over ``max_body_size`` (the app's and the front's: one wording)."""
    return PayloadTooLarge(f"request body over max_body_size ({limit} bytes)")
