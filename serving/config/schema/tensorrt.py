"""The Paddle-TensorRT block of an op: ``op.<name>.local_service_conf.tensorrt``
(read with ``device_type: 2``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TrtShape(BaseModel):
    """TensorRT dynamic-shape range of one input."""

    model_config = ConfigDict(extra="forbid", strict=True)
    min: list[int] = Field(description="Smallest shape of the input, one int per dimension.")
    opt: list[int] = Field(description="The shape TensorRT optimises for.")
    max: list[int] = Field(description="Largest shape of the input.")

    @model_validator(mode="after")
    def _ordered(self) -> TrtShape:
        if not len(self.min) == len(self.opt) == len(self.max):
            raise ValueError("min, opt and max must have the same length")
        for lo, mid, hi in zip(self.min, self.opt, self.max):
            if not lo <= mid <= hi:
                raise ValueError(f"need min <= opt <= max in every dimension, got {self.min}, {self.opt}, {self.max}")
        return self


class TensorRTConf(BaseModel):
    """Paddle-TensorRT engine settings (``device_type: 2``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    workspace_size: int = Field(default=1 << 30, ge=1, description="TensorRT workspace (bytes).")
    min_subgraph_size: int = Field(default=3, ge=0, description="Smallest subgraph TensorRT takes over (operators).")
    use_static: bool = Field(
        default=False, description="Save the built TensorRT engine to disk and reuse it at the next start."
    )
    use_calib_mode: bool = Field(
        default=False,
        description="With `precision: int8`: calibrate on the first requests (Paddle-TensorRT's calibration "
        "mode) instead of reading a quantised model's scales. Paddle Serving's `use_calib`.",
    )
    dynamic_shape: dict[str, TrtShape] = Field(
        default_factory=dict,
        description="Dynamic-shape range of each input, by input name: `{min, opt, max}`, int lists of "
        "equal length with min <= opt <= max in every dimension.",
        json_schema_extra={"doc_type": "mapping input name → `{min, opt, max}`"},
    )
