"""Paddle Serving's ``POST /<name>/prediction`` and the native ``POST /<name>/predict``,
each also as ``/<name>/v<n>/...``: each parses its body and hands the app a
:class:`Pending` request on the request core."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request, Response

from serving.batching.request import RequestState
from serving.http.json_answer import json_response
from serving.http.native_request import parse_native
from serving.http.pending import Pending
from serving.http.routes.errors import error_response
from serving.http.wsgi_call import client_gone
from serving.paddle_serving.door import PaddleServingDoor, request_from_json, response_document
from serving.paddle_serving.stage import PADDLE_REQUEST
from serving.service.core import RequestCore, answered_version, is_light, paddle_document
from serving.service.decode import plain_kind
from serving.service.jsonio import plain
from serving.service.parse import parse_paddle

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def paddle(door: PaddleServingDoor, request: Request, name: str, version: int | None) -> Pending | Response:
    core = door.core
    target = core.target(name, version, request.content_length)
    pipeline, limits = target
    if pipeline.input_kind() == PADDLE_REQUEST:
        return paddle_serving(door, request, name, version, target)
    parsed = parse_paddle(
        request.get_data(),
        kind=plain_kind(pipeline.input_kind(), name),
        max_inputs=limits.max_inputs,
        priority_levels=pipeline.config.dag.priority_levels,
    )
    key = core.route_key(name, version, request.headers.get)
    return Pending(
        start=lambda: core.start(name, version, parsed, target, key),
        finish=lambda handles: json_response(paddle_document(handles, parsed.logid)),
        gone=client_gone(request.environ),
        light=is_light(pipeline, parsed),
        fail=lambda err: error_response(request, err, parsed.logid),
    )


def paddle_serving(door: PaddleServingDoor, request: Request, name: str, version: int | None, target: Any) -> Response:
    """A user's ``web_service.py``: its RequestOp and ResponseOp answer (serving.paddle_serving.door)."""
    core = door.core
    pipeline, limits = target
    message, options = request_from_json(request.get_data(), limits.max_inputs, pipeline.config.dag.priority_levels)
    key = core.route_key(name, version, request.headers.get)
    resp, status = door.answer(name, version, message, options, target, key, "http", client_gone(request.environ))
    return json_response(response_document(resp), status)


def native(core: RequestCore, request: Request, name: str, version: int | None) -> Pending:
    target = core.target(name, version, request.content_length)
    pipeline, limits = target
    # decided now: a reload may remove the route while the request runs, never its answer
    show_version = core.shows_version(name, version)
    parsed = parse_native(
        request,
        kind=plain_kind(pipeline.input_kind(), name),
        max_inputs=limits.max_inputs,
        priority_levels=pipeline.config.dag.priority_levels,
    )

    def finish(handles: Sequence[RequestState]) -> Response:
        body: dict[str, Any] = {"results": [plain(h.result(timeout=0)) for h in handles]}
        if parsed.timing:
            body["timing"] = [h.timing_summary() for h in handles]
        if show_version:
            body["version"] = answered_version(handles, None)
        return json_response(body)

    key = core.route_key(name, version, request.headers.get)
    return Pending(
        start=lambda: core.start(name, version, parsed, target, key),
        finish=finish,
        gone=client_gone(request.environ),
        light=is_light(pipeline, parsed),
    )


def register(app: HttpApp, ctx: RouteContext) -> None:
    core, latest = ctx.core, {"version": None}
    door = PaddleServingDoor(core)
    for suffix, bound in (
        ("prediction", functools.partial(paddle, door)),
        ("predict", functools.partial(native, core)),
    ):
        app.add_prediction_rule(f"/<name>/{suffix}", suffix, bound, defaults=latest, light=core.takes_text)
        app.add_prediction_rule(f"/<name>/v<int:version>/{suffix}", f"{suffix}_version", bound, light=core.takes_text)
