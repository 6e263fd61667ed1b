"""What every protocol of the client makes of a failed or successful answer: a
failure is a :class:`PipelineError` with the HTTP status the same request gets
over HTTP (0: no answer arrived), and a Paddle answer's values are JSON texts."""

from __future__ import annotations

import json
from typing import Any

from .transport import Answer


class PipelineError(Exception):
    """A request failed: ``status`` (HTTP code, 0 = no answer), ``message``,
    ``retry_after`` (seconds or None) and the raw response ``body`` (str)."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None, body: str = ""):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.body = body


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` value in seconds, or None (absent, or an HTTP date: not worth parsing for a hint)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def error_message(resp: Answer) -> str:
    """The server's message in a failed HTTP answer: Paddle's ``err_msg``, the native
    ``error.message`` or KServe's ``error`` string, else the body's start."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        if body.get("err_msg"):
            return str(body["err_msg"])
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    text = resp.text.strip()
    return text[:300] if text else (resp.reason or "error")


def answer_error(resp: Answer) -> PipelineError:
    """The PipelineError of a failed HTTP answer: its status, message and ``Retry-After``."""
    retry_after = retry_after_seconds(resp.headers.get("Retry-After"))
    return PipelineError(resp.status_code, error_message(resp), retry_after=retry_after, body=resp.text)


def parse_value(value: Any) -> Any:
    """Paddle-protocol values are JSON strings; fall back to the raw value."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
