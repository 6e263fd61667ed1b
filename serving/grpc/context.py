"""What every gRPC service is built from: the HTTP app's own prediction routes
(their pipeline choice, limits, admission, decode budget and submission, so a
gRPC call is checked and run exactly as an HTTP request is), the token, the
count of calls in flight that drain waits for, and the room messages are read in."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Flask

from serving.grpc.call import Call
from serving.grpc.message_room import MessageRoom
from serving.grpc.request_message import RequestMessage
from serving.http.body_budget import Claim
from serving.http.handler_count import HANDLERS, HandlerCount
from serving.http.json_budget import value_budget
from serving.http.limits import largest_max_inputs
from serving.http.routes.prediction import PREDICTION_ROUTES, PredictionRoutes


@dataclass(frozen=True)
class GrpcServices:
    routes: Callable[[], PredictionRoutes]  # read per call: the Ray ingress rebinds the app's routes object
    auth_token: str | None
    handlers: HandlerCount  # calls running now (drain waits for zero)
    room: MessageRoom  # messages read and decoded at once, in the body budget

    @classmethod
    def of(cls, app: Flask, auth_token: str | None, room: MessageRoom) -> GrpcServices:
        return cls(lambda: app.extensions[PREDICTION_ROUTES], auth_token, app.extensions[HANDLERS], room)

    def max_values(self) -> int:
        """What a message may make the parser build: a JSON body's value budget for the largest
        ``max_inputs_per_request`` served (the pipeline is known only once the message is parsed;
        its own limits are checked then)."""
        return value_budget(largest_max_inputs(self.routes().repository.config))

    def read(self, messages: Iterator[bytes], call: Call, request: RequestMessage, claim: Claim) -> Any:
        """The call's one message, read under ``claim`` (shrunk to its size), counted, parsed."""
        return request.parse(self.room.read_one(messages, call, claim), self.max_values())
