"""A JSON answer as the app writes every one: the core's JSON (:mod:`serving.service.jsonio`),
keys sorted and a final newline."""

from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Response

from serving.service.jsonio import dumps


def json_body(doc: Any) -> bytes:
    return dumps(doc, sort_keys=True) + b"\n"


def json_response(doc: Any, status: int = 200) -> Response:
    return Response(json_body(doc), status, mimetype="application/json")
