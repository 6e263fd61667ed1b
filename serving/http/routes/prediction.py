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
from serving.service.core import RequestCore, answered_version, is_light, paddle_document
from serving.service.jsonio import plain
from serving.service.parse import parse_paddle

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext


def paddle(core: RequestCore, request: Request, name: str, version: int | None) -> Pending:
    target = core.target(name, version, request.content_length)
    pipeline, limits = target
    parsed = parse_paddle(
        request.get_data(),
        kind=pipeline.input_kind() or "image",
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


def native(core: RequestCore, request: Request, name: str, version: int | None) -> Pending:
    target = core.target(name, version, request.content_length)
    pipeline, limits = target
    # decided now: a reload may remove the route while the request runs, never its answer
    show_version = core.shows_version(name, version)
    parsed = parse_native(
        request,
        kind=pipeline.input_kind() or "image",
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
    for suffix, view in (("prediction", paddle), ("predict", native)):
        bound = functools.partial(view, core)
        app.add_prediction_rule(f"/<name>/{suffix}", suffix, bound, defaults=latest, light=core.takes_text)
        app.add_prediction_rule(f"/<name>/v<int:version>/{suffix}", f"{suffix}_version", bound, light=core.takes_text)
