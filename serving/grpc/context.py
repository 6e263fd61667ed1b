"""What every gRPC service is built from: the request core (the pipeline choice,
limits, admission, decode budget and submission every door shares, so a gRPC
call is checked and run exactly as an HTTP request is), the token, and the room
messages are read in."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from serving.grpc.call import Call
from serving.grpc.message_room import MessageRoom
from serving.grpc.request_message import RequestMessage
from serving.service.body_budget import Claim
from serving.service.core import RequestCore


@dataclass(frozen=True)
class GrpcServices:
    core: RequestCore  # its handler count: the calls running now (drain waits for zero)
    auth_token: str | None
    room: MessageRoom  # messages read and decoded at once, in the body budget

    def read(self, messages: Iterator[bytes], call: Call, request: RequestMessage, claim: Claim) -> Any:
        """The call's one message, read under ``claim`` (shrunk to its size), counted, parsed."""
        return request.parse(self.room.read_one(messages, call, claim), self.core.max_values())
