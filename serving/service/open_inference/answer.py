"""A request's results -> its output tensors, one row per input: ``result`` holds each
row's JSON, byte for byte the native route's ``results[i]``; a typed output one field."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.errors import InternalError
from serving.service.jsonio import to_json
from serving.service.open_inference.model import BYTES, RESULT, TensorSpec
from serving.service.open_inference.tensors import serialize_bytes, serialize_fp32


@dataclass(frozen=True)
class OutputTensor:
    name: str
    datatype: str
    values: list[Any]  # str for BYTES, float for FP32

    @property
    def shape(self) -> list[int]:
        return [len(self.values)]

    def serialized(self) -> bytes:
        """The binary form (``raw_output_contents``, HTTP's binary tensor data)."""
        if self.datatype == BYTES:
            return serialize_bytes(v.encode("utf-8") for v in self.values)
        return serialize_fp32(self.values)


def _field(result: Any, spec: TensorSpec, row: int) -> Any:
    value = result.get(spec.name) if isinstance(result, Mapping) else None
    if spec.datatype == BYTES and isinstance(value, str):
        return value
    if spec.datatype != BYTES and isinstance(value, numbers.Real) and not isinstance(value, bool):  # numpy's too
        return float(value)
    # the final op broke its answer_fields declaration
    raise InternalError(f"row {row}: the answer has no {spec.datatype} field {spec.name!r}")


def output_tensors(results: Sequence[Any], chosen: Sequence[TensorSpec]) -> list[OutputTensor]:
    outputs = []
    for spec in chosen:
        if spec.name == RESULT:
            values = [to_json(r) for r in results]
        else:
            values = [_field(r, spec, i) for i, r in enumerate(results)]
        outputs.append(OutputTensor(spec.name, spec.datatype, values))
    return outputs
