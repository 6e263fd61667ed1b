"""Engine-wide settings: ``dag:`` and ``dag.tracer`` (the op graph itself is :mod:`serving.config.dag`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from serving.config.schema.value_checks import is_number, none_as_empty


class TracerConf(BaseModel):
    """Periodic per-op summary in the log; ``interval_s: 0`` (or negative) turns it off."""

    model_config = ConfigDict(extra="forbid", strict=True)
    interval_s: float = Field(
        default=0.0,
        ge=0,
        description="Log a per-op summary every this many seconds; 0 (or negative: Paddle Serving's -1): off.",
    )

    @field_validator("interval_s", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        if is_number(value) and value < 0:
            return 0.0  # Paddle Serving's -1
        return value


class DagConfig(BaseModel):
    """Engine-wide settings (``dag:``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    channel_size: int = Field(
        default=64, ge=1, description="Capacity of the bounded queue between ops (items; backpressure)."
    )
    request_timeout_ms: int = Field(
        default=30000, ge=1, description="Request deadline (ms; a request may ask for less); past it: 504."
    )
    max_queue_size: int = Field(default=512, ge=1, description="Requests in flight before admission answers 503.")
    use_profile: bool = Field(default=False, description="Per-request timeline lines in the log.")
    tracer: TracerConf = Field(
        default_factory=TracerConf, description="The periodic per-op summary in the log (`dag.tracer`)."
    )
    priority_levels: int = Field(default=1, ge=1, le=16, description="Request priority levels in each batcher queue.")
    priority_max_wait_ms: int = Field(
        default=1000,
        ge=0,
        description="Anti-starvation: a queued item older than this (ms) goes before higher priorities.",
    )
    shutdown_timeout_s: float = Field(default=30.0, ge=0, description="How long shutdown drains queued work (s).")

    _tracer = field_validator("tracer", mode="before")(none_as_empty)
