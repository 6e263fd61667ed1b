"""A bench-only runner on OpenVINO Runtime: what the precision bench needs to
run a model the server cannot run yet (an NNCF int8 model), through our own
op hooks. It reads the same ``.pdmodel`` as Paddle's embedded OpenVINO engine,
or a quantized ``.xml``.

Not the server's engine: ``local_service_conf.engine: openvino`` (the lead's,
in serving/runners) replaces it for fp32/bf16 profiles once merged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: our precision names -> OpenVINO's inference precision hint
PRECISION_HINTS = MappingProxyType({"fp32": "f32", "int8": "f32", "bf16": "bf16"})


def cpu_capabilities() -> set[str]:
    """OpenVINO's ``OPTIMIZATION_CAPABILITIES`` of this CPU (e.g. FP32, INT8, BF16); empty without OpenVINO."""
    try:
        import openvino as ov
    except ImportError:
        return set()
    return {str(c).upper() for c in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")}


class OpenVinoRunner:
    """One compiled model and one infer request: a :class:`serving.op.Runner`.

    ``precision`` "int8" expects a model NNCF already quantized (its
    non-quantized layers stay fp32 through the f32 hint, so a bf16 CPU does
    not silently mix in bf16); "bf16" needs a CPU with bf16 (the caller checks).
    """

    def __init__(self, model: Any, *, threads: int, precision: str = "fp32"):
        import openvino as ov

        if precision not in PRECISION_HINTS:
            raise ValueError(f"precision {precision!r}: expected one of {sorted(PRECISION_HINTS)}")
        core = ov.Core()
        if isinstance(model, str):
            model = core.read_model(model)
        config = {
            "INFERENCE_NUM_THREADS": threads,
            "INFERENCE_PRECISION_HINT": PRECISION_HINTS[precision],
            "PERFORMANCE_HINT": "LATENCY",
        }
        self.precision = precision
        self._compiled = core.compile_model(model, "CPU", config)
        self._request = self._compiled.create_infer_request()
        self.input_names: list[str] = [port.get_any_name() for port in self._compiled.inputs]
        log.info("OpenVINO Runtime %s model compiled (%d thread(s))", precision, threads)

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        missing = [n for n in self.input_names if n not in feed]
        if missing:
            raise ValueError(f"bad feed: missing inputs {missing} (model inputs: {self.input_names})")
        self._request.infer({n: np.ascontiguousarray(feed[n]) for n in self.input_names})
        return [np.array(self._request.get_output_tensor(i).data) for i in range(len(self._compiled.outputs))]

    def close(self) -> None:
        """Nothing to release beyond what garbage collection frees."""
