"""The ``ray:`` blocks: how each op (``op.<name>.ray``) and the ingress (top-level ``ray``) run
as Ray Serve deployments, in Ray Serve's own field names; the single-process server ignores
them, and op-dependent defaults are :mod:`serving.rayserve.deployments`'.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from serving.config.errors import FieldProblem
from serving.config.schema.value_checks import none_as_empty


class RayAutoscaling(BaseModel):
    """``autoscaling_config``: Ray Serve scales replicas on ongoing requests per replica."""

    model_config = ConfigDict(extra="forbid", strict=True)
    min_replicas: int = Field(
        default=1,
        ge=0,
        description="Fewest replicas (0: none while idle; the first request then waits for a replica to start "
        "and load, and `/health/ready` is 503 meanwhile).",
    )
    max_replicas: int = Field(default=1, ge=1, description="Most replicas (at least `min_replicas`).")
    initial_replicas: int | None = Field(
        default=None,
        ge=0,
        description="Replicas at deploy, between `min_replicas` and `max_replicas`; null: `min_replicas`.",
    )
    target_ongoing_requests: float = Field(
        default=2.0,
        gt=0,
        description="Average ongoing requests per replica Serve steers to. For an op, a replica's ongoing "
        "requests are those whose items its batcher holds: a target near `max_batch_size x instance_num` "
        "keeps batches full.",
    )
    upscale_delay_s: float = Field(
        default=30.0,
        ge=0,
        description="How long the load must stay above target before Serve adds replicas (s).",
    )
    downscale_delay_s: float = Field(
        default=600.0,
        ge=0,
        description="How long the load must stay below target before Serve removes replicas (s).",
    )

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


class RayActorOptions(BaseModel):
    """``ray_actor_options``: what one replica reserves on its node."""

    model_config = ConfigDict(extra="forbid", strict=True)
    num_cpus: float | None = Field(
        default=None,
        ge=0,
        description="CPUs Ray reserves per replica (scheduling; an op's own pinning decides which cores its "
        "OpenVINO processes run on). null: for an op on CPU `instance_num x thread_num`, on GPU 1; for the "
        "ingress 1. On the local cluster `batchline serve --ray` starts without `--address`, null values that "
        "do not fit the machine are scaled down together until they do; set values are kept, and refused "
        "(exit 2) when they cannot fit.",
    )
    num_gpus: float | None = Field(
        default=None,
        ge=0,
        description="GPUs per replica; inside the replica, `devices` ids count the GPUs Ray assigned. null: "
        "for an op on GPU the number of `devices` (at least 1), else none.",
    )
    memory: int | None = Field(
        default=None, ge=0, description="Memory Ray reserves per replica (bytes; scheduling only)."
    )
    resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources per replica, name -> amount >= 0, e.g. `{node_type_a: 1}` to keep "
        "the op on nodes that have it.",
        json_schema_extra={"doc_type": "mapping name → number ≥ 0"},
    )

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
    num_replicas: int | None = Field(
        default=None,
        ge=1,
        description="Fixed number of replicas; not together with `autoscaling_config`. null: 1, unless "
        "`autoscaling_config` is set.",
    )
    autoscaling_config: RayAutoscaling | None = Field(
        default=None,
        description="Let Ray Serve scale the replicas (below); not together with `num_replicas`.",
    )
    ray_actor_options: RayActorOptions = Field(
        default_factory=RayActorOptions, description="What one replica reserves on its node (below)."
    )
    # Ray Serve's own default, 5, would cap every batch at 5 requests
    max_ongoing_requests: int | None = Field(
        default=None,
        ge=1,
        description="Calls one replica holds at once; more wait in the caller. For an op at least "
        "`max_batch_size x instance_num`. null: for an op 2 x `max_batch_size x instance_num`; for the "
        "ingress the summed `dag.max_queue_size` of the served pipelines + `worker_num`.",
    )
    max_queued_requests: int | None = Field(
        default=None,
        ge=-1,
        description="Calls that may wait in each caller for a replica; beyond it Ray refuses and the request "
        "gets 503 with `Retry-After`. -1: no limit (Ray's own default). null: the summed `dag.max_queue_size` "
        "of the pipelines that use it (finite, yet never refusing a request admission let in).",
        json_schema_extra={"doc_type": "int ≥ 1, -1 or null"},
    )
    graceful_shutdown_timeout_s: float = Field(
        default=20.0,
        ge=0,
        description="How long a stopping replica may finish what it holds before Ray kills it (s).",
    )
    health_check_period_s: float = Field(
        default=10.0,
        gt=0,
        description="How often Serve asks a replica whether its stage still runs (s); a stopped stage: the "
        "replica is replaced.",
    )

    _empty = field_validator("ray_actor_options", mode="before")(none_as_empty)

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
    app_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The Ray Serve application's name (`serve status`). null: the pipeline's `name` when the "
        "files serve one name, else `batchline`.",
    )
    route_prefix: str = Field(
        default="/",
        description="Where the application's routes start on Serve's proxy (starts with `/`; no trailing "
        "`/` unless it is `/`).",
    )
    ingress: RayDeploymentConf = Field(
        default_factory=RayDeploymentConf,
        description="The HTTP ingress deployment: the keys of `op.<name>.ray`, with the ingress's own defaults.",
    )
    metrics_interval_s: float = Field(
        default=2.0,
        gt=0,
        description="How often each replica sends its metrics to the ingress's `/metrics` (s); a replica "
        "silent for 3 intervals drops out.",
    )
    access_log: bool = Field(
        default=False,
        description="Ray Serve's access log: a line per HTTP request and per op call in every replica's log "
        "(off by default: at hundreds of calls a second it floods the logs and costs CPU).",
    )
    direct_ingress: bool = Field(
        default=False,
        description="Ray Serve's direct ingress: each ingress replica also answers HTTP on a port of its own "
        "(the lowest free from 30000 on its node; `batchline serve --ray` logs it), past Serve's proxy, which "
        "still answers on `http_port` (on the head node only). A lone request saves the proxy's hop (about "
        "15 ms on one machine); throughput under load does not gain. Set by `batchline serve --ray` for a "
        "local cluster it starts; a running cluster's nodes must be started with `RAY_SERVE_ENABLE_DIRECT_INGRESS=1`.",
    )

    _empty = field_validator("ingress", mode="before")(none_as_empty)

    @field_validator("route_prefix")
    @classmethod
    def _route_prefix(cls, value: str) -> str:
        """Ray Serve's rules, checked here so that a config it would refuse at deploy fails ``batchline check``."""
        if not value.startswith("/") or (value != "/" and value.endswith("/")) or "{" in value or "}" in value:
            raise ValueError(
                f"must start with '/', not end with '/' (unless it is '/') and hold no '{{' or '}}', got {value!r}"
            )
        return value
