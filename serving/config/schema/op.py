"""One op of the graph: ``op.<name>`` (class, inputs, params, limits, sharing)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from serving.config.errors import FieldProblem
from serving.config.ray_schema import RayDeploymentConf
from serving.config.schema.local_service import LocalServiceConf
from serving.config.schema.value_checks import NAME_PATTERN, is_int
from serving.op import Op

# Paddle Serving op-level spellings -> our key (relative to the op); folded by compat.py
OP_ALIASES = MappingProxyType(
    {
        "concurrency": "local_service_conf.concurrency",
        "batch_size": "local_service_conf.max_batch_size",
        "auto_batching_timeout": "local_service_conf.max_queue_delay",
        "timeout": "timeout_ms",
    }
)


class OpConfig(BaseModel):
    """One op of the graph (``op.<name>``)."""

    # strict per field: strict as a whole would refuse a mapping for the LocalServiceConf dataclass
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    yaml_hidden_keys: ClassVar[frozenset] = frozenset({"name"})
    yaml_extra_keys: ClassVar[frozenset] = frozenset(OP_ALIASES)

    name: str = Field(strict=True, description="The op's name: its key under `op:` (filled in by the loader).")
    cls: str = Field(
        alias="class",
        strict=True,
        description="A builtin op (`ocr_det`, `ocr_cls`, `ocr_rec`, `ernie_cls`) or the import path "
        "`package.module:Class` / `package.module.Class` of a `serving.op.Op` subclass.",
    )
    input_ops: list[str] = Field(
        default_factory=list,
        strict=True,
        description="Ops whose output feeds this op; empty: fed by the request.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        strict=True,
        description="Op-specific settings, validated by the op class's `Params` model.",
    )
    local_service_conf: LocalServiceConf = Field(
        default_factory=LocalServiceConf, description="Predictor and batcher settings (below)."
    )
    timeout_ms: int | None = Field(
        default=None,
        strict=True,
        description="Time limit for one item in this op, queue wait and run (ms); -1 or null: none.",
        json_schema_extra={"doc_type": "int ≥ 1, -1 or null"},
    )
    retry: int = Field(
        default=1,
        ge=0,
        strict=True,
        description="After a failed batch run, retry its items one by one this many times.",
    )
    share: bool | str = Field(
        default=False,
        description="Run this op on one stage with every op of the served pipelines that has the same share "
        "name (`true`: the op's name).",
        json_schema_extra={"doc_type": "bool or a name"},
    )
    ray: RayDeploymentConf | None = Field(
        default=None,
        description="How the op runs as a Ray Serve deployment (`serve --ray`, `ray build` only); null: the "
        "defaults of `op.<name>.ray`.",
    )

    _params_model: BaseModel | None = PrivateAttr(default=None)
    _op_class: type[Op] | None = PrivateAttr(default=None)

    @field_validator("input_ops", "params", "local_service_conf", mode="before")
    @classmethod
    def _empty_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:  # a YAML key written with no value
            return [] if info.field_name == "input_ops" else {}
        if info.field_name == "local_service_conf" and isinstance(value, Mapping):
            return dict(value)
        return value

    @field_validator("timeout_ms", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        if is_int(value) and value == -1:
            return None
        if is_int(value) and value < 1:
            raise ValueError(f"must be >= 1 (ms), or -1 for no limit, got {value}")
        return value

    @field_validator("share", mode="before")
    @classmethod
    def _share(cls, value: Any) -> Any:
        if value is None:
            return False
        if isinstance(value, str):
            if not re.fullmatch(NAME_PATTERN, value):
                raise ValueError(f"a share name must match {NAME_PATTERN}, got {value!r}")
            return value
        if not isinstance(value, bool):
            raise ValueError(f"must be true, false or a share name, got {value!r}")
        return value

    @model_validator(mode="after")
    def _ray_holds_a_batch(self) -> OpConfig:
        """Each call to an op replica carries one request: fewer calls at once than full batches
        of every instance could never fill them."""
        svc = self.local_service_conf
        limit = None if self.ray is None else self.ray.max_ongoing_requests
        needed = svc.max_batch_size * svc.instance_num
        if limit is not None and limit < needed:
            raise FieldProblem(
                "ray.max_ongoing_requests",
                f"{limit} is below what full batches need: max_batch_size {svc.max_batch_size} "
                f"x instance_num {svc.instance_num} = {needed} (each call carries one request)",
            )
        return self

    @property
    def share_name(self) -> str | None:
        """The name this op is shared under across pipelines (None: not shared)."""
        if self.share is True:
            return self.name
        return self.share or None

    @property
    def params_model(self) -> BaseModel | None:
        """``params`` validated against the op class's ``Params`` model."""
        return self._params_model

    @property
    def op_class(self) -> type[Op] | None:
        """The resolved :class:`serving.op.Op` subclass."""
        return self._op_class
