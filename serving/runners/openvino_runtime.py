"""OpenVINO Runtime as an engine (``engine: openvino``). ``infer`` releases the
GIL, so ``instance_num`` instances are infer requests on ONE compiled model with
that many streams, in the server's own process (one copy of the weights). The
model is read as it is (``inference.pdmodel``, ``.onnx`` or IR ``.xml``; not
Paddle 3's PIR ``.json``). Why each choice: docs/DESIGN_NOTES.md, "OpenVINO
Runtime as an engine".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.config.schema import LocalServiceConf
from serving.paths import openvino_model_file
from serving.runners.openvino_kernels import effective_conv_kernels, with_conv_kernels
from serving.runners.paddle_inference import check_feed

log = logging.getLogger(__name__)

DEVICE_LABEL = "cpu:openvino-runtime"


@dataclass(frozen=True)
class CompilePlan:
    """How one op's model is compiled: the properties given to ``compile_model``
    and the precision it will really run at (``bf16`` may fall back)."""

    properties: dict[str, Any]
    precision: str  # "fp32" | "bf16": what runs
    fell_back: bool  # bf16 asked, the CPU lacks it


def compile_properties(conf: LocalServiceConf, streams: int, capabilities: Sequence[str]) -> CompilePlan:
    """The CPU plugin properties for ``streams`` instances of ``conf``, each of ``thread_num``
    threads: the config says how many instances and threads it wants, not the plugin.
    ``capabilities``: the plugin's ``OPTIMIZATION_CAPABILITIES`` ("BF16": native bfloat16)."""
    if streams < 1:
        raise ValueError(f"instance count must be >= 1, got {streams}")
    wanted = conf.precision
    precision = "bf16" if wanted == "bf16" and "BF16" in capabilities else "fp32"
    properties: dict[str, Any] = {
        "NUM_STREAMS": streams,
        "INFERENCE_NUM_THREADS": streams * conf.thread_num,
        "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
        "ENABLE_HYPER_THREADING": False,
        # OpenVINO would bind stream i of every compiled model to the same core i: two
        # 1-instance ops would share a core. The OS balances them; processes are pinned by the CPU plan
        "ENABLE_CPU_PINNING": False,
    }
    return CompilePlan(properties, precision, fell_back=wanted == "bf16" and precision != "bf16")


class OpenVinoRunner:
    """One infer request of a compiled model: a :class:`serving.op.Runner`. Not thread-safe
    by design (the request owns its tensors); the engine runs one batch at a time on it."""

    def __init__(self, compiled: Any, precision: str, input_names: list[str], output_names: list[str]):
        self._compiled = compiled
        self._request = compiled.create_infer_request()
        self.device = DEVICE_LABEL
        self.precision = precision
        self.input_names = list(input_names)
        self.output_names = list(output_names)

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch; outputs are fresh arrays in ``output_names`` order.
        Raises ValueError naming missing or unexpected feed names."""
        check_feed(self.input_names, feed)
        # inputs read in place; outputs copied out of the request's tensors, which the next run overwrites
        inputs = {i: np.ascontiguousarray(feed[name]) for i, name in enumerate(self.input_names)}
        results = self._request.infer(inputs, share_inputs=True, share_outputs=False)
        return [np.asarray(results[port]) for port in self._compiled.outputs]

    def close(self) -> None:
        """Drop the request (the compiled model goes with its last instance)."""
        self._request = None

    def __repr__(self) -> str:
        return f"OpenVinoRunner(precision={self.precision!r}, inputs={self.input_names}, outputs={self.output_names})"


def create_openvino_runners(conf: LocalServiceConf, count: int) -> list[OpenVinoRunner]:
    """``count`` instances of ``conf``'s model: one compiled model with
    ``count`` streams, one infer request per instance (one copy of the weights)."""
    import openvino as ov

    if conf.model_config is None:
        raise ValueError("local_service_conf.model_config is required to build a predictor")
    path = openvino_model_file(conf.model_config)
    core = ov.Core()
    plan = compile_properties(conf, count, core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    if plan.fell_back:
        log.warning(
            "precision bf16: this CPU has no native bfloat16 (AVX512-BF16 or AMX); %s runs in fp32", conf.model_config
        )
    start = time.perf_counter()
    model = core.read_model(path)
    # names as the model file gives them: compiling may add aliases to a port
    # (an int64 input gains the name of the conversion OpenVINO inserts)
    inputs, outputs = [p.get_any_name() for p in model.inputs], [p.get_any_name() for p in model.outputs]
    kernels = effective_conv_kernels(conf.conv_kernels, plan.precision)
    model, marked = with_conv_kernels(core, model, kernels)
    compiled = core.compile_model(model, "CPU", plan.properties)
    runners = [OpenVinoRunner(compiled, plan.precision, inputs, outputs) for _ in range(count)]
    log.info(
        "loaded %s on OpenVINO Runtime %s in %.3fs (%d streams x %d threads, %s, conv_kernels %s on %d layers, "
        "inputs=%s outputs=%s)",
        path,
        ov.__version__,
        time.perf_counter() - start,
        count,
        conf.thread_num,
        plan.precision,
        kernels,
        marked,
        runners[0].input_names,
        runners[0].output_names,
    )
    return runners


# The engine table's loader (serving.runners.runner_modules)
def load_in_process(conf: LocalServiceConf, count: int) -> list[OpenVinoRunner]:
    return create_openvino_runners(conf, count)


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> OpenVinoRunner:
    """One instance with its own compiled model; ``device_id`` is a GPU's, and OpenVINO here runs on CPU only."""
    return create_openvino_runners(conf, 1)[0]
