"""Paddle Inference predictors (``engine: paddle``): ``local_service_conf`` ->
a ``paddle.inference.Config`` as plain data first (:func:`config_plan`, testable
without Paddle or a GPU), then applied (:func:`build_config`); load, clone
instances that share weights, run feeds. The Paddle 3.3 facts this relies on
(oneDNN on by default, ``enable_memory_optim`` and PIR, the GIL): DESIGN_NOTES.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.config.schema import LocalServiceConf
from serving.paths import model_files
from serving.runners.placement import gpu_of

logger = logging.getLogger(__name__)

# our precision name -> paddle.inference.PrecisionType member name
_PRECISION_MEMBERS = {"fp32": "Float32", "fp16": "Half", "int8": "Int8", "bf16": "Bfloat16"}

PlanStep = tuple[str, tuple[Any, ...]]


@dataclass(frozen=True)
class Precision:
    """A ``paddle.inference.PrecisionType`` kept by name, so a plan stays plain, comparable data."""

    name: str  # a LocalServiceConf precision

    def to_paddle(self) -> Any:
        from paddle.inference import PrecisionType

        return getattr(PrecisionType, _PRECISION_MEMBERS[self.name])


def check_feed(input_names: Sequence[str], feed: Mapping[str, np.ndarray]) -> None:
    """Raise ValueError naming missing or unexpected feed names."""
    missing = [n for n in input_names if n not in feed]
    extra = [n for n in feed if n not in input_names]
    if missing or extra:
        parts = [f"missing inputs {missing}"] if missing else []
        parts += [f"unexpected inputs {extra}"] if extra else []
        raise ValueError(f"bad feed: {'; '.join(parts)} (model inputs: {list(input_names)})")


def _device_id(conf: LocalServiceConf, device_id: int | None) -> int:
    if device_id is not None:
        return int(device_id)
    return conf.device_ids[0] if conf.device_ids else 0


def _cpu_steps(conf: LocalServiceConf) -> list[PlanStep]:
    steps: list[PlanStep] = [("set_cpu_math_library_num_threads", (conf.thread_num,))]
    if conf.use_openvino:
        # the whole program becomes one OpenVINO op; OpenVINO gets thread_num
        # threads (ov::inference_num_threads) and the precision as its hint
        return [*steps, ("enable_openvino_engine", (Precision(conf.precision),))]
    if not conf.use_mkldnn:
        # oneDNN is ON by default in Paddle 3 CPU builds: turn it off for real.
        return [*steps, ("disable_mkldnn", ())]
    steps.append(("enable_mkldnn", ()))
    if conf.mkldnn_cache_capacity > 0:
        steps.append(("set_mkldnn_cache_capacity", (conf.mkldnn_cache_capacity,)))
    if conf.precision == "bf16":
        steps.append(("enable_mkldnn_bfloat16", ()))
    elif conf.precision == "int8":
        steps.append(("enable_mkldnn_int8", ()))
    return steps


def _gpu_steps(conf: LocalServiceConf, device_id: int | None) -> list[PlanStep]:
    # With TensorRT the precision goes to the engine; the GPU pool stays fp32.
    pool_precision = Precision("fp32") if conf.device_type == 2 else Precision(conf.precision)
    steps: list[PlanStep] = [("enable_use_gpu", (conf.gpu_mem_mb, _device_id(conf, device_id), pool_precision))]
    if conf.device_type != 2:
        return steps
    trt = conf.tensorrt
    steps.append(
        (
            "enable_tensorrt_engine",
            (
                trt.workspace_size if trt else 1 << 30,
                conf.max_batch_size,
                trt.min_subgraph_size if trt else conf.min_subgraph_size,
                Precision(conf.precision),
                trt.use_static if trt else False,
                trt.use_calib_mode if trt else False,
            ),
        )
    )
    if trt and trt.dynamic_shape:
        shapes = trt.dynamic_shape
        bounds = tuple({n: list(getattr(s, b)) for n, s in shapes.items()} for b in ("min", "max", "opt"))
        steps.append(("set_trt_dynamic_shape_info", bounds))
    return steps


def config_plan(conf: LocalServiceConf, device_id: int | None = None) -> list[PlanStep]:
    """The ordered ``paddle.inference.Config`` calls, ``(method_name, positional args)``,
    that realise ``conf`` on GPU ``device_id`` (default: the first of ``conf.device_ids``;
    ignored on CPU). Args are in Paddle's order; TensorRT without a ``tensorrt``
    section uses Paddle's defaults. Raises ValueError without ``model_config`` and
    FileNotFoundError for a model directory without model files."""
    if not conf.model_config:
        raise ValueError("local_service_conf.model_config is required to build a predictor")
    program, params = model_files(conf.model_config)
    plan: list[PlanStep] = [("set_model", (program, params))]
    plan += _cpu_steps(conf) if conf.device_type == 0 else _gpu_steps(conf, device_id)
    plan.append(("switch_ir_optim", (conf.ir_optim,)))
    if conf.mem_optim and not program.endswith(".json"):
        # Paddle 3.3: enable_memory_optim() breaks PIR (.json) programs, which reuse buffers anyway
        plan.append(("enable_memory_optim", ()))
    plan.append(("disable_glog_info", ()))
    return plan


def build_config(conf: LocalServiceConf, device_id: int | None = None) -> Any:
    """A real ``paddle.inference.Config`` for ``conf``: :func:`config_plan`'s calls made."""
    import paddle.inference

    config = paddle.inference.Config()
    for name, args in config_plan(conf, device_id):
        method = getattr(config, name, None)
        if method is None:  # pragma: no cover - depends on the Paddle version
            raise RuntimeError(f"this Paddle build has no Config.{name}()")
        method(*(a.to_paddle() if isinstance(a, Precision) else a for a in args))
    return config


def _identical(arrays: Sequence[np.ndarray], others: Sequence[np.ndarray]) -> bool:
    """Same shapes and bytes; the first few thousand values are compared first,
    so the usual answer ("different") costs microseconds, not a full pass."""
    for a, b in zip(arrays, others):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not np.array_equal(a.reshape(-1)[:4096], b.reshape(-1)[:4096]):
            return False
    return all(np.array_equal(a, b) for a, b in zip(arrays, others))


class PaddlePredictor:
    """One ``paddle.inference.Predictor`` with a dict-in, list-out ``run``.

    NOT thread-safe, by design: a predictor owns its input/output tensors (Paddle
    Serving's thread mode mixed up results that way). The engine runs at most one
    batch at a time on an instance; more instances come from :meth:`clone`."""

    def __init__(self, predictor: Any, device: str = "cpu"):
        self._predictor = predictor
        self.device = device
        self.input_names: list[str] = list(predictor.get_input_names())
        self.output_names: list[str] = list(predictor.get_output_names())
        self._inputs = {n: predictor.get_input_handle(n) for n in self.input_names}
        self._outputs = [predictor.get_output_handle(n) for n in self.output_names]
        # Paddle's OpenVINO op logs an exception inside a run instead of raising
        # it, leaving the previous run's outputs in place: remember the last
        # feed and outputs to refuse such stale results (OpenVINO only)
        self._last: tuple[list[np.ndarray], list[np.ndarray]] | None = None

    @classmethod
    def load(cls, conf: LocalServiceConf, device_id: int | None = None) -> PaddlePredictor:
        """Load a new predictor (own weights) for ``conf``."""
        import paddle
        import paddle.inference

        if conf.device_type >= 1 and not paddle.device.is_compiled_with_cuda():
            raise RuntimeError(f"device_type {conf.device_type} needs a GPU build of Paddle; this one is CPU-only")
        device = "cpu" if conf.device_type == 0 else f"gpu:{_device_id(conf, device_id)}"
        config = build_config(conf, device_id)
        if not conf.use_openvino:
            return cls(paddle.inference.create_predictor(config), device)
        # OpenVINO writes its compiled model to the "optim cache dir" (default: ./__cache__);
        # it compiles once, at creation, so a private directory removed right after is enough
        if not config.openvino_engine_enabled():  # a Paddle build without OpenVINO keeps its own kernels
            logger.warning(
                "use_openvino: this Paddle build did not enable its OpenVINO engine; %s runs on Paddle's CPU kernels",
                conf.model_config,
            )
            return cls(paddle.inference.create_predictor(config), device)
        with tempfile.TemporaryDirectory(prefix="batchline-openvino-") as cache_dir:
            config.set_optim_cache_dir(cache_dir)
            return cls(paddle.inference.create_predictor(config), "cpu:openvino")

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch; outputs are fresh arrays in ``output_names`` order.
        Raises ValueError naming missing or unexpected feed names."""
        check_feed(self.input_names, feed)
        for name in self.input_names:
            array = np.ascontiguousarray(feed[name])
            handle = self._inputs[name]
            handle.reshape(list(array.shape))
            handle.copy_from_cpu(array)
        self._predictor.run()
        outputs = [h.copy_to_cpu() for h in self._outputs]
        if self.device.endswith("openvino"):
            self._refuse_stale(feed, outputs)
        return outputs

    def _refuse_stale(self, feed: Mapping[str, np.ndarray], outputs: list[np.ndarray]) -> None:
        """Raise if a run returned exactly the previous run's outputs for a different feed."""
        inputs = [np.array(feed[n], copy=True) for n in self.input_names]  # feeds may be reused buffers
        last, self._last = self._last, (inputs, outputs)
        if last is None:
            return
        if _identical(outputs, last[1]) and not _identical(inputs, last[0]):
            self._last = None
            shapes = {n: list(np.shape(feed[n])) for n in self.input_names}
            raise RuntimeError(
                f"the OpenVINO engine failed on inputs {shapes} (its error is in the log); "
                "refusing the previous run's outputs"
            )

    def shrink_memory(self) -> int:
        """Release cached activation memory (after a burst of large shapes); returns the
        bytes Paddle reports released. The next run of a large shape allocates again."""
        return int(self._predictor.try_shrink_memory() or 0)

    def close(self) -> None:
        """Nothing to release beyond what garbage collection frees (the Runner protocol asks for it)."""

    def clone(self) -> PaddlePredictor:
        """A new instance sharing this one's weights (own activations, own I/O)."""
        return PaddlePredictor(self._predictor.clone(), self.device)  # keeps "cpu:openvino"

    def __repr__(self) -> str:
        return f"PaddlePredictor(device={self.device!r}, inputs={self.input_names}, outputs={self.output_names})"


def create_predictors(conf: LocalServiceConf, count: int) -> list[PaddlePredictor]:
    """``count`` predictor instances for ``conf``: the first on each device
    (:func:`serving.runners.placement.gpu_of`) is loaded there, the rest are its clones."""
    if count < 1:
        raise ValueError(f"predictor count must be >= 1, got {count}")
    loaded: dict[int | None, PaddlePredictor] = {}
    result: list[PaddlePredictor] = []
    model_dir = conf.model_config
    for i in range(count):
        dev = gpu_of(conf, i)
        start = time.perf_counter()
        source = loaded.get(dev)
        if source is None:
            predictor = PaddlePredictor.load(conf, dev)
            loaded[dev] = predictor
            logger.info(
                "loaded predictor %s on %s in %.3fs (inputs=%s outputs=%s threads=%s mkldnn=%s precision=%s)",
                model_dir,
                predictor.device,
                time.perf_counter() - start,
                predictor.input_names,
                predictor.output_names,
                conf.thread_num,
                conf.use_mkldnn,
                conf.precision,
            )
        else:
            predictor = source.clone()
            logger.info("cloned predictor %s on %s in %.3fs", model_dir, predictor.device, time.perf_counter() - start)
        result.append(predictor)
    return result


# The engine table's loader (serving.runners.runner_modules)
def load_in_process(conf: LocalServiceConf, count: int) -> list[PaddlePredictor]:
    return create_predictors(conf, count)


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> PaddlePredictor:
    return PaddlePredictor.load(conf, device_id)
