"""The ``ray:`` blocks of a config: how each op (``op.<name>.ray``) and the
HTTP ingress (top-level ``ray``) run as Ray Serve deployments.

Only what the Ray backend reads; the single-process server ignores them.
Field names are Ray Serve's own (``num_replicas``, ``autoscaling_config``,
``ray_actor_options``, ``max_ongoing_requests``), so a Ray user reads them as
in a Ray Serve config file. Defaults that depend on the op (CPUs from
``instance_num x thread_num``, the in-flight limit from the batch size) are
filled in by the Ray backend, not here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from serving.config.errors import FieldProblem


class RayAutoscaling(BaseModel):
    """``autoscaling_config``: Ray Serve scales replicas on ongoing requests per replica."""

    model_config = ConfigDict(extra="forbid", strict=True)
    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=1, ge=1)
    initial_replicas: int | None = Field(default=None, ge=0)
    # for an op, a replica's ongoing requests are the items its batcher holds:
    # a target near max_batch_size x instance_num keeps batches full
    target_ongoing_requests: float = Field(default=2.0, gt=0)
    upscale_delay_s: float = Field(default=30.0, ge=0)
    downscale_delay_s: float = Field(default=600.0, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> RayAutoscaling:
        if self.min_replicas > self.max_replicas:
            raise FieldProblem("min_replicas", f"{self.min_replicas} is above max_replicas {self.max_replicas}")
        if self.initial_replicas is not None and not self.min_replicas <= self.initial_replicas <= self.max_replicas:
            raise FieldProblem(
                "initial_replicas",
                f"{self.initial_replicas} is not between min_replicas {self.min_replicas} "
                f"and max_replicas {self.max_replicas}",
            )
        return self

    def as_ray(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class RayActorOptions(BaseModel):
    """``ray_actor_options``: what one replica reserves on its node."""

    model_config = ConfigDict(extra="forbid", strict=True)
    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)
    memory: int | None = Field(default=None, ge=0)  # bytes
    resources: dict[str, float] = Field(default_factory=dict)

    @field_validator("resources", mode="before")
    @classmethod
    def _resources(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, dict):
            out = {}
            for name, amount in value.items():
                if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
                    raise FieldProblem(str(name), f"must be a number >= 0, got {amount!r}")
                out[name] = float(amount)
            return out
        return value


class RayDeploymentConf(BaseModel):
    """One deployment: an op's ``ray:`` block, or the ingress's (top-level ``ray.ingress``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    num_replicas: int | None = Field(default=None, ge=1)
    autoscaling_config: RayAutoscaling | None = None
    ray_actor_options: RayActorOptions = Field(default_factory=RayActorOptions)
    # calls one replica takes at once (Ray Serve's default, 5, would cap every batch at 5 requests)
    max_ongoing_requests: int | None = Field(default=None, ge=1)
    # calls waiting in each caller for a replica; beyond it Ray refuses (503 here). None: the
    # Ray backend derives a finite default from the config; -1: no limit (Ray's own default)
    max_queued_requests: int | None = Field(default=None, ge=-1)
    graceful_shutdown_timeout_s: float = Field(default=20.0, ge=0)
    health_check_period_s: float = Field(default=10.0, gt=0)

    @field_validator("ray_actor_options", mode="before")
    @classmethod
    def _empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("max_queued_requests")
    @classmethod
    def _queue_bound(cls, value: int | None) -> int | None:
        """Ray Serve's own rule, checked at load rather than at deploy."""
        if value == 0:
            raise ValueError("must be -1 (no limit) or at least 1, got 0")
        return value

    @model_validator(mode="after")
    def _one_scaling(self) -> RayDeploymentConf:
        if self.num_replicas is not None and self.autoscaling_config is not None:
            raise FieldProblem(
                "num_replicas", "and autoscaling_config are alternatives (fixed or autoscaled): set one of them"
            )
        return self


class RayConf(BaseModel):
    """Top-level ``ray:``: the HTTP ingress deployment and the application."""

    model_config = ConfigDict(extra="forbid", strict=True)
    # the Ray Serve application's name (default: the pipeline's name)
    app_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    route_prefix: str = "/"
    ingress: RayDeploymentConf = Field(default_factory=RayDeploymentConf)
    # how often each replica sends its metrics to the ingress's /metrics
    metrics_interval_s: float = Field(default=2.0, gt=0)
    # Ray Serve's access log: a line per HTTP request and per op call (off: at
    # hundreds of calls a second it floods the replicas' logs)
    access_log: bool = False

    @field_validator("ingress", mode="before")
    @classmethod
    def _empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("route_prefix")
    @classmethod
    def _route_prefix(cls, value: str) -> str:
        """Ray Serve's rules, checked here so that a config it would refuse at deploy fails ``batchline check``."""
        if not value.startswith("/") or (value != "/" and value.endswith("/")) or "{" in value or "}" in value:
            raise ValueError(
                f"must start with '/', not end with '/' (unless it is '/') and hold no '{{' or '}}', got {value!r}"
            )
        return value
