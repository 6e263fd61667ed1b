"""The HTTP front (``http:``, a server key): what reads requests, and its limits on clients."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class HttpConf(BaseModel):
    """``http:``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    front_workers: int = Field(
        default=0,
        ge=0,
        le=64,
        description="HTTP front processes. 0: the HTTP front serves in the engine's own process (one core's "
        "worth of HTTP). N: N processes share the port and read, authenticate, parse, decode and admit "
        "requests, handing their inputs to the engine's process, which batches them all together "
        "(docs/architecture.md). Each holds its share of `max_buffered_mb` and `decode_budget_mb`, at "
        "least one largest request. Also `batchline serve --front-workers N`.",
    )
    front: Literal["asyncio"] = Field(
        default="asyncio",
        description="What reads HTTP: `asyncio` (httptools on an event loop, the app in worker threads), the one "
        'HTTP server (docs/DESIGN_NOTES.md, "The house, round 3"; `waitress`, the other one before, was removed).',
    )
    channel_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="A connection with nothing in flight and nothing received for this long (s) is closed "
        "(keep-alive connections left open, clients that connect and say nothing).",
    )
    request_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="A request whose headers and body have not all arrived this long (s) after its first byte "
        "is dropped with its connection, unanswered. This closes slow-loris clients, which trickle a byte "
        "every few seconds and so never look idle. Size it to your largest upload on your slowest client link.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="A request whose headers have not all arrived this long (s) after its first byte is "
        "dropped with its connection, unanswered: slow-loris clients that trickle headers are cut off long "
        "before `request_timeout_s` (headers are a few hundred bytes; a body may legitimately take longer).",
    )
    connection_limit: int | None = Field(
        default=None,
        ge=1,
        description="Connections open at once; more are answered 503 with `Retry-After`. null: the HTTP threads "
        "(`worker_num` + the pipelines' `max_queue_size`) + 128. Each may hold one request body; what they hold "
        "in all is bounded by `max_buffered_mb`.",
    )
    max_buffered_mb: int | None = Field(
        default=None,
        ge=1,
        description="Request bodies the HTTP front holds at once, in memory, for the whole "
        "server (MiB). null: 4 x the largest `max_body_size`. A request takes its `Content-Length` from it "
        "before its body is read (a chunked body: as it arrives) and gives it back once answered; one that "
        "does not fit gets 503 with `Retry-After`, its body unread. gRPC messages (`rpc_port`) take theirs from "
        "it too, twice the largest `max_body_size` while one is read (at most the whole budget), twice its size "
        "once read, until decoded; a "
        "call that finds no room waits for it up to its deadline or `request_timeout_s`, then gets 503 (with front "
        "processes, gRPC gets a budget of one front's share). Must hold one body of the largest "
        "`max_body_size`, else the config is refused.",
    )
