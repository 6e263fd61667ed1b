"""What every gRPC service is built from: the HTTP app's own prediction routes
(their pipeline choice, limits, admission, decode budget and submission, so a
gRPC call is checked and run exactly as an HTTP request is), the token, and the
count of calls in flight that drain waits for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask

from serving.grpc.message_slots import MessageSlots
from serving.http.handler_count import HANDLERS, HandlerCount
from serving.http.routes.prediction import PREDICTION_ROUTES, PredictionRoutes


@dataclass(frozen=True)
class GrpcServices:
    routes: Callable[[], PredictionRoutes]  # read per call: the Ray ingress rebinds the app's routes object
    auth_token: str | None
    handlers: HandlerCount  # calls running now (drain waits for zero)
    slots: MessageSlots  # messages read and decoded at once

    @classmethod
    def of(cls, app: Flask, auth_token: str | None, slots: MessageSlots) -> GrpcServices:
        return cls(lambda: app.extensions[PREDICTION_ROUTES], auth_token, app.extensions[HANDLERS], slots)
