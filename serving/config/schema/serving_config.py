"""A whole config file: one pipeline's top-level keys and its blocks."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from serving.config.dag import Dag
from serving.config.ray_schema import RayConf
from serving.config.schema.dag_settings import DagConfig
from serving.config.schema.http_settings import HttpConf
from serving.config.schema.op import OpConfig
from serving.config.schema.routing import RoutingConf
from serving.config.schema.security import SecurityConf
from serving.config.schema.value_checks import NAME_PATTERN, none_as_empty


class ServingConfig(BaseModel):
    """A whole config file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(
        pattern=NAME_PATTERN,
        description="The pipeline's name; route `POST /{name}/prediction`.",
        json_schema_extra={"doc_default": "the file name's stem"},
    )
    http_port: int = Field(default=9999, ge=1, le=65535, description="The HTTP port.")
    rpc_port: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=65535,
        description="The gRPC port: Paddle Serving's pipeline service (`PipelineClient`) and the Open Inference "
        "Protocol's `GRPCInferenceService` (`tritonclient.grpc`, KServe) on one port, with the HTTP API's routing, "
        "token, limits and statuses (docs/protocols.md). null: no gRPC; 0: a free port. Also `batchline serve "
        "--rpc-port`.",
    )
    host: str = Field(
        default="127.0.0.1",
        description="Bind address (`0.0.0.0` listens on all interfaces: it needs `auth_token`, or "
        "`security.insecure`).",
    )
    worker_num: int = Field(default=16, ge=1, description="HTTP threads.")
    auth_token: str | None = Field(
        default=None,
        description="Bearer token required on every route but health and the page's files. null: "
        "`$BATCHLINE_AUTH_TOKEN`, else none.",
    )
    admin_token: str | None = Field(
        default=None,
        description="Bearer token `POST /admin/reload` requires (the `auth_token` does not work there). null: "
        "`$BATCHLINE_ADMIN_TOKEN`, else reload over HTTP is refused (403) and only SIGHUP reloads.",
    )
    max_image_pixels: int = Field(
        default=40000000,
        ge=1,
        description="Largest image (pixels), read from the file header before decoding; a larger one gets "
        "413. A request may hold 2 x this in pixels and 2 x this x 4 bytes decoded (two 8-bit BGRA images; a "
        "16-bit RGBA image counts 8 bytes a pixel), else 413.",
    )
    max_inputs_per_request: int = Field(
        default=64,
        ge=1,
        description="Most values in one request (more: 413). It also bounds what a body may make the server "
        "build before it is parsed: a JSON body over 4 x this + 256 values (brackets and commas outside "
        "strings) gets 413, nested over 32 levels 400; a multipart body over this + 16 parts 413.",
    )
    decode_budget_mb: int | None = Field(
        default=None,
        ge=1,
        description="Decoded images in flight in the whole server (MiB); null: derived from the largest "
        "`max_image_pixels` (see Decode budget). A server key that a reload applies.",
    )
    version: int | None = Field(
        default=None,
        ge=1,
        description="This file's version of the pipeline `name`; route `POST /{name}/v{N}/prediction`. "
        "null: 1. Several files may define versions of one name.",
    )
    routing: RoutingConf | None = Field(
        default=None,
        description="How `/{name}/prediction` picks among the versions of `name` (in one file per name).",
    )
    http: HttpConf = Field(
        default_factory=HttpConf,
        description="The HTTP front's limits on slow and idle clients; a server key (files served together "
        "must agree).",
    )
    security: SecurityConf = Field(
        default_factory=SecurityConf,
        description="Who may reach the server: the opt-out of the token rule, browser origins, Host names; "
        "a server key.",
    )
    dag: DagConfig = Field(default_factory=DagConfig, description="Engine settings.")
    op: dict[str, OpConfig] = Field(description="The ops, by name, in graph order (at least one).")
    ray: RayConf = Field(
        default_factory=RayConf,
        description="The HTTP ingress and the application on Ray Serve (`serve --ray`, `ray build` only).",
    )

    _source_path: str = PrivateAttr(default="<config>")
    _dag_graph: Dag | None = PrivateAttr(default=None)

    _blocks = field_validator("dag", "ray", "http", "security", mode="before")(none_as_empty)

    @field_validator("op")
    @classmethod
    def _some_ops(cls, value: dict[str, OpConfig]) -> dict[str, OpConfig]:
        if not value:
            raise ValueError("must define at least one op")
        return value

    @property
    def source_path(self) -> str:
        """The file this config came from (absolute), or the ``source`` label."""
        return self._source_path

    @property
    def effective_version(self) -> int:
        """``version``, or 1 when the file gives none."""
        return 1 if self.version is None else self.version

    @property
    def ops(self) -> list[OpConfig]:
        """Ops in config order."""
        return list(self.op.values())

    @property
    def dag_graph(self) -> Dag:
        """The op graph (built once)."""
        if self._dag_graph is None:
            self._dag_graph = Dag({op.name: op.input_ops for op in self.ops})
        return self._dag_graph

    @property
    def input_kind(self) -> str | None:
        """How request values are decoded: the source ops' ``input_kind`` (None: unbound or mixed)."""
        classes = (self.op[s].op_class for s in self.dag_graph.sources)
        kinds = {None if cls is None else cls.input_kind for cls in classes}
        return kinds.pop() if len(kinds) == 1 else None

    def op_table(self) -> list[dict[str, Any]]:
        """One row per op (config order): what ``batchline check`` and ``GET /{name}/config`` show."""
        rows = []
        for op in self.ops:
            svc = op.local_service_conf
            rows.append(
                {
                    "op": op.name,
                    "class": op.cls,
                    "inputs": list(op.input_ops),
                    "max_batch_size": svc.max_batch_size,
                    "max_batch_units": svc.max_batch_units,
                    "max_queue_delay": svc.max_queue_delay,
                    "preferred_batch_size": list(svc.preferred_batch_size),
                    "batching_policy": svc.batching_policy,
                    "concurrency": svc.concurrency,
                    "instance_num": svc.instance_num,
                    "instance_mode": svc.instance_mode,
                    "device": svc.device_label,
                    "precision": svc.precision,
                    "model": svc.model_config or "-",
                }
            )
        return rows
