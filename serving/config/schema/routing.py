"""How ``/{name}/prediction`` picks among the versions of one name: ``routing:`` and ``routing.shadow``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from serving.config.errors import FieldProblem
from serving.config.schema.value_checks import is_int

HEADER_PATTERN = r"^[A-Za-z0-9-]+$"


class ShadowConf(BaseModel):
    """``routing.shadow``: a version that gets a copy of a sampled share of routed requests."""

    model_config = ConfigDict(extra="forbid", strict=True)
    version: int = Field(
        ge=1,
        description="The version that gets the copies: it must exist, takes no weight and is not the default.",
    )
    sample: float = Field(
        default=1.0, gt=0, le=1, description="The share of routed requests copied to the shadow (0 < sample <= 1)."
    )
    max_in_flight: int = Field(default=4, ge=1, description="Copies in flight at most; copies beyond it are dropped.")


class RoutingConf(BaseModel):
    """``routing``; which versions exist is known only across files: the repository checks that."""

    model_config = ConfigDict(extra="forbid", strict=True)
    default: int | None = Field(
        default=None,
        ge=1,
        description="The version `/{name}/prediction` reaches. null: the version with the largest weight "
        "(ties: the highest), else the highest version (never the shadow).",
    )
    weights: dict[int, int] | None = Field(
        default=None,
        description="Version -> weight (int >= 0, not all 0): the split of `/{name}/prediction`, sticky per "
        "route key. Every named version must exist; with weights, `default` must have a weight > 0.",
        json_schema_extra={"doc_type": "mapping version → int ≥ 0, or null"},
    )
    key_header: str = Field(
        default="X-Route-Key",
        pattern=HEADER_PATTERN,
        description="The header holding a request's route key; without it, the request's logid (0: no key).",
    )
    shadow: ShadowConf | None = Field(
        default=None, description="A version that gets a copy of a sampled share of routed requests (below)."
    )

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value  # None, or a wrong type pydantic names
        if not value:
            raise ValueError("must give a weight to at least one version, or be left out")
        for version, weight in value.items():
            if not is_int(version) or version < 1:
                raise FieldProblem(str(version), f"must be a version (an integer >= 1), got {version!r}")
            if not is_int(weight) or weight < 0:
                raise FieldProblem(str(version), f"weight must be an integer >= 0, got {weight!r}")
        if sum(value.values()) == 0:
            raise ValueError("must not all be 0")
        return dict(value)

    @model_validator(mode="after")
    def _consistent(self) -> RoutingConf:
        if self.weights is not None and self.default is not None and self.weights.get(self.default, 0) == 0:
            raise FieldProblem(
                "default", f"version {self.default} gets no traffic under routing.weights; drop one of the two"
            )
        if self.shadow is not None:
            version = self.shadow.version
            if self.weights is not None and self.weights.get(version, 0) > 0:
                raise FieldProblem(
                    "shadow.version", f"version {version} is the shadow, so its routing.weights entry must be 0"
                )
            if self.default == version:
                raise FieldProblem(
                    "shadow.version", f"version {version} is the shadow, so it cannot be routing.default"
                )
        return self
