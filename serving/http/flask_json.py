"""Flask's ``jsonify`` through the core's JSON (:mod:`serving.service.jsonio`)."""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.json.provider import JSONProvider

from serving.service.jsonio import dumps, loads


class FlaskJSON(JSONProvider):
    """Flask's JSON through :func:`loads` / :func:`dumps`; keys sorted and a
    final newline, as Flask's default provider wrote answers."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return dumps(obj, sort_keys=True).decode("utf-8")

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        obj = self._prepare_response_obj(args, kwargs)
        return Response(dumps(obj, sort_keys=True) + b"\n", mimetype="application/json")
