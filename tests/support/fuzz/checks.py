"""Whether the server's answer to a fuzz case is acceptable: never a 5xx or a
dropped connection; a 4xx among the allowed statuses with a JSON error
message (lenient cases: a 200 too). A 431 is the HTTP front's own, in plain text
as waitress answers it: it is refused before any route is known."""

from __future__ import annotations

import json
from typing import Any

from serving.service.error_body import is_inference_protocol_route
from tests.support.fuzz.case import Case


def error_message(body: Any, path: str) -> str:
    """The error message of a JSON answer: Paddle ``err_msg`` on /prediction, KServe's ``error``
    string on the Open Inference Protocol's routes, ``error.message`` otherwise."""
    if not isinstance(body, dict):
        return ""
    if path.endswith("/prediction") and "err_msg" in body:
        return str(body.get("err_msg") or "") if body.get("err_no") not in (0, None) else ""
    err = body.get("error")
    if isinstance(err, str) and is_inference_protocol_route(path):
        return err
    return str(err.get("message") or "") if isinstance(err, dict) else ""


def check(case: Case, status: int, body_text: str) -> str | None:
    """None when the answer is acceptable, else what is wrong (status 0: no HTTP answer)."""
    if status >= 500:
        return f"{status} (server error)"
    if case.lenient or case.expect == (200,):
        if status == 200 or 400 <= status < 500:
            return None if status == 200 or _has_message(case, body_text) else f"{status} without a message"
        return f"unexpected {status}"
    if not 400 <= status < 500:
        return f"{status}, expected a 4xx"
    if case.expect and status not in case.expect:
        return f"{status}, expected {case.expect}"
    if status == 431:
        return None if body_text else "431 without a message"
    if not _has_message(case, body_text):
        return f"{status} without a JSON error message: {body_text[:120]!r}"
    return None


def _has_message(case: Case, body_text: str) -> bool:
    try:
        return bool(error_message(json.loads(body_text), case.path))
    except ValueError:
        return False
