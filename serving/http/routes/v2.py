"""The Open Inference Protocol (KServe v2) over HTTP: ``GET /v2``, a model's metadata,
``.../ready`` and ``POST .../infer``; the probes ``/v2/health/*`` are the health group's.
Every route passes the app's access check first, as the other prediction routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from werkzeug.wrappers import Request, Response

from serving.batching.request import RequestState
from serving.errors import UnsupportedMediaType
from serving.http import v2_body as http_body
from serving.http.json_answer import json_response
from serving.http.pending import Pending
from serving.http.wsgi_call import client_gone
from serving.paddle_serving.door import PaddleServingDoor
from serving.paddle_serving.open_inference import answer_script
from serving.paddle_serving.stage import PADDLE_REQUEST
from serving.service.limits import RequestLimits
from serving.service.open_inference.infer import CallFacts, InferAnswer, prepare
from serving.service.open_inference.model import ModelViews, server_metadata
from serving.service.open_inference.request import InferRequest

if TYPE_CHECKING:
    from serving.http.app import HttpApp, RouteContext

PROTOCOL = "v2"  # requests by front end (metrics)
MODEL = "/v2/models/<name>"
VERSION = "/v2/models/<name>/versions/<int:version>"


class InferenceProtocolRoutes:
    def __init__(self, ctx: RouteContext):
        self.ctx = ctx
        self.views = ModelViews()
        self.door = PaddleServingDoor(ctx.core)

    def register(self, app: HttpApp) -> None:
        app.add_url_rule("/v2", "v2_server", self.server, methods=["GET"])
        for prefix, suffix, defaults in ((MODEL, "", {"version": None}), (VERSION, "_version", None)):
            app.add_url_rule(prefix, f"v2_model{suffix}", self.metadata, methods=["GET"], defaults=defaults)
            app.add_url_rule(f"{prefix}/ready", f"v2_ready{suffix}", self.ready, methods=["GET"], defaults=defaults)
            app.add_prediction_rule(
                f"{prefix}/infer", f"v2_infer{suffix}", self.infer, light=self.ctx.core.takes_text, defaults=defaults
            )

    def server(self, request: Request) -> Response:
        return json_response(server_metadata())

    def metadata(self, request: Request, name: str, version: int | None) -> Response:
        return json_response(self.views.get(self.ctx.repository.config, name, version).metadata())

    def ready(self, request: Request, name: str, version: int | None) -> Response:
        self.views.get(self.ctx.repository.config, name, version)  # 404 for a model not served
        ready = self.ctx.repository.ready
        return json_response({"name": name, "ready": ready}, 200 if ready else 503)

    def infer(self, request: Request, name: str, version: int | None) -> Pending | Response:
        if request.headers.get("Content-Encoding", "identity").strip().lower() != "identity":
            raise UnsupportedMediaType("compressed request bodies are not supported (Content-Encoding)")
        choices: list[http_body.BinaryChoice] = []

        def read(limits: RequestLimits) -> InferRequest:
            body = request.get_data()  # after the size check: target() refused a body over max_body_size
            parsed, choice = http_body.read_request(
                body, request.headers.get(http_body.HEADER_LENGTH), limits.max_inputs
            )
            choices.append(choice)
            return parsed

        call = CallFacts(
            protocol=PROTOCOL,
            size=request.content_length,
            header=request.headers.get,
            gone=client_gone(request.environ),
        )
        target = self.ctx.core.target(name, version, call.size)
        if target[0].input_kind() == PADDLE_REQUEST:  # a Paddle Serving script's pipeline
            answer = answer_script(self.door, name, version, target, read(target[1]), call)
            return self._response(answer, choices[0])
        prepared = prepare(self.ctx.core, self.views, name, version, target, read, call)

        def finish(handles: Sequence[RequestState]) -> Response:
            return self._response(prepared.answer(handles), choices[0])

        return Pending(start=prepared.start, finish=finish, gone=call.gone, light=prepared.light)

    @staticmethod
    def _response(answer: InferAnswer, choice: http_body.BinaryChoice) -> Response:
        body, header_length = http_body.write_answer(answer, choice)
        if header_length is None:
            return Response(body, content_type="application/json")
        response = Response(body, content_type="application/octet-stream")
        response.headers[http_body.HEADER_LENGTH] = str(header_length)
        return response


def register(app: HttpApp, ctx: RouteContext) -> None:
    InferenceProtocolRoutes(ctx).register(app)
