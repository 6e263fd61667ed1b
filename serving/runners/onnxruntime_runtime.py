"""ONNX Runtime as an engine (``engine: onnxruntime``): the op's ONNX model
(:mod:`serving.runners.onnx_export`, the file ``engine: torch`` reads) in one
``InferenceSession`` per device, shared by the instances placed there:
``Session.run`` is thread-safe and releases the GIL, so they compute at once.

What the session gets is a plain function of the config (:func:`session_plan`):
the CPU provider with ``thread_num`` threads per instance; the CUDA provider
with cuDNN's heuristic algorithm search (no exhaustive benchmark of every
convolution at each new shape) and no TF32 (fp32 means the CPU's numbers);
TensorRT with its engines and timing cache kept under the user cache folder,
fp16 by ``trt_fp16_enable``.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.config.schema import LocalServiceConf
from serving.paths import user_cache_dir
from serving.runners.onnx_export import onnx_file
from serving.runners.padding_masks import load_masked
from serving.runners.paddle_inference import check_feed
from serving.runners.placement import gpu_of, lone_gpu

log = logging.getLogger(__name__)

CPU, CUDA, TENSORRT = "CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider"
# device_type -> the providers a session asks for, preferred first (a node TensorRT or CUDA
# cannot run falls to the next)
PROVIDERS: Mapping[int, tuple[str, ...]] = {0: (CPU,), 1: (CUDA, CPU), 2: (TENSORRT, CUDA, CPU)}
GPU_PACKAGE = "onnxruntime-gpu"


@dataclass(frozen=True)
class SessionPlan:
    """One session of an op's model: where it runs and with what options."""

    providers: tuple[tuple[str, dict[str, Any]], ...]  # (name, options), preferred first
    intra_op_num_threads: int
    optimization: str  # a GraphOptimizationLevel member's name
    gpu: int | None
    precision: str

    @property
    def label(self) -> str:
        """The runner's ``device``: ``cpu:onnxruntime``, ``gpu:N:onnxruntime`` or ``gpu:N:onnxruntime-trt``."""
        if self.gpu is None:
            return "cpu:onnxruntime"
        return f"gpu:{self.gpu}:onnxruntime" + ("-trt" if self.providers[0][0] == TENSORRT else "")


def trt_cache_dir(ort_version: str, environ: Mapping[str, str] | None = None) -> str:
    """Where TensorRT engines and timing caches are kept: one folder per ONNX Runtime version,
    since an engine built by one TensorRT release cannot be read by another."""
    return os.path.join(user_cache_dir("tensorrt", environ), f"onnxruntime-{ort_version}")


def trt_shapes(conf: LocalServiceConf) -> dict[str, str]:
    """``tensorrt.dynamic_shape`` as TensorRT profile options (``name:1x3x32x32,...``); none: TensorRT
    sizes its profile from the shapes it meets (a new one rebuilds the engine, then the cache has it)."""
    shapes = conf.tensorrt.dynamic_shape if conf.tensorrt else {}
    if not shapes:
        return {}
    spell = lambda dims: "x".join(str(d) for d in dims)
    return {
        f"trt_profile_{bound}_shapes": ",".join(f"{name}:{spell(getattr(s, bound))}" for name, s in shapes.items())
        for bound in ("min", "opt", "max")
    }


def provider_options(
    conf: LocalServiceConf, provider: str, gpu: int, ort_version: str, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The options of one GPU provider for an instance on GPU ``gpu``."""
    if provider == CUDA:
        return {"device_id": gpu, "cudnn_conv_algo_search": "HEURISTIC", "use_tf32": 0}
    trt = conf.tensorrt
    cache = trt_cache_dir(ort_version, environ)
    return {
        "device_id": gpu,
        "trt_engine_cache_enable": True,
        "trt_engine_cache_path": cache,
        "trt_timing_cache_enable": True,
        "trt_timing_cache_path": cache,
        "trt_fp16_enable": conf.precision == "fp16",
        "trt_max_workspace_size": trt.workspace_size if trt else 1 << 30,
        "trt_min_subgraph_size": trt.min_subgraph_size if trt else conf.min_subgraph_size,
        **trt_shapes(conf),
    }


def session_plan(
    conf: LocalServiceConf,
    gpu: int | None,
    instances: int,
    ort_version: str,
    environ: Mapping[str, str] | None = None,
) -> SessionPlan:
    """The session for ``instances`` instances of ``conf`` on GPU ``gpu`` (None: the CPU).

    Every instance calls ``run`` on the one session, whose intra-op pool they share, and
    each caller computes too: ``thread_num - 1`` pool threads per instance plus the callers
    make ``thread_num`` threads per instance, as the config reads (one instance: ``thread_num``)."""
    if instances < 1:
        raise ValueError(f"instance count must be >= 1, got {instances}")
    on_cpu = conf.device_type == 0 or gpu is None
    names = PROVIDERS[0] if on_cpu else PROVIDERS[conf.device_type]
    providers = tuple(
        (name, {} if name == CPU or gpu is None else provider_options(conf, name, gpu, ort_version, environ))
        for name in names
    )
    threads = instances * (conf.thread_num - 1) + 1
    return SessionPlan(providers, threads, "ORT_ENABLE_ALL", None if on_cpu else gpu, conf.precision)


def require_providers(plan: SessionPlan, available: Sequence[str], ort_version: str) -> None:
    """Refuse a GPU plan this ONNX Runtime cannot run (it would fall back to the CPU with a warning)."""
    missing = [name for name, _ in plan.providers if name not in available]
    if missing:
        raise RuntimeError(
            f"engine: onnxruntime on device_type {1 if plan.providers[0][0] == CUDA else 2} needs "
            f"{' and '.join(missing)}, which onnxruntime {ort_version} lacks (it has {', '.join(available)}): "
            f"pip install {GPU_PACKAGE} in place of onnxruntime (with CUDA 12 and cuDNN 9; TensorRT 10 for "
            "device_type 2), or use device_type 0"
        )


def require_session_providers(plan: SessionPlan, session_providers: Sequence[str]) -> None:
    """Refuse a session that came up without a GPU provider it was given: ONNX Runtime logs a
    provider whose libraries fail to load (CUDA, cuDNN, TensorRT) and goes on without it."""
    lost = [name for name, _ in plan.providers if name not in session_providers]
    if lost:
        raise RuntimeError(
            f"engine: onnxruntime on {plan.label}: ONNX Runtime could not start {' and '.join(lost)} "
            f"(the session has only {', '.join(session_providers)}; its error above names the library it "
            "could not load: CUDA 12, cuDNN 9 or TensorRT 10), or use device_type 0"
        )


class OrtRunner:
    """One instance: a :class:`serving.op.Runner` over a session it may share with others."""

    def __init__(self, session: Any, plan: SessionPlan):
        self._session = session
        self.device = plan.label
        self.precision = plan.precision
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch; outputs are fresh numpy arrays (floats as float32) in ``output_names`` order.
        Raises ValueError naming missing or unexpected feed names."""
        check_feed(self.input_names, feed)
        outputs = self._session.run(self.output_names, {name: feed[name] for name in self.input_names})
        return [as_float32(o) for o in outputs]

    def close(self) -> None:
        """Drop this instance's hold on the session (it goes with its last instance)."""
        self._session = None

    def __repr__(self) -> str:
        return f"OrtRunner(device={self.device!r}, precision={self.precision!r}, inputs={self.input_names})"


def as_float32(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype.kind == "f" and array.dtype != np.float32 else array


def create_ort_runners(conf: LocalServiceConf, gpus: list[int | None]) -> list[OrtRunner]:
    """One runner per entry of ``gpus`` (None: the CPU); one session per device."""
    import onnxruntime as ort

    if conf.model_config is None:
        raise ValueError("local_service_conf.model_config is required to build a predictor")
    plans = {gpu: session_plan(conf, gpu, count, ort.__version__) for gpu, count in Counter(gpus).items()}
    available = ort.get_available_providers()
    for plan in plans.values():
        require_providers(plan, available, ort.__version__)
    start = time.perf_counter()
    path = onnx_file(conf.model_config)
    model: str | bytes = load_masked(path).SerializeToString() if conf.mask_padding else path
    sessions = {gpu: new_session(ort, model, plan) for gpu, plan in plans.items()}
    runners = [OrtRunner(sessions[gpu], plans[gpu]) for gpu in gpus]
    log.info(
        "loaded %s on ONNX Runtime %s in %.3fs (%d instance(s) on %s, %s, inputs=%s outputs=%s)",
        path,
        ort.__version__,
        time.perf_counter() - start,
        len(runners),
        ", ".join(f"{plans[gpu].label} {sessions[gpu].get_providers()}" for gpu in plans),
        conf.precision,
        runners[0].input_names,
        runners[0].output_names,
    )
    return runners


def new_session(ort: Any, model: str | bytes, plan: SessionPlan) -> Any:
    """A session of ``model`` (its file, or the serialized graph) as ``plan`` says."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = plan.intra_op_num_threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, plan.optimization)
    for name, provider in plan.providers:
        if name == TENSORRT:
            os.makedirs(provider["trt_engine_cache_path"], exist_ok=True)
    # no fallback: a GPU provider that fails is an error here, not a silent run on the CPU
    session = ort.InferenceSession(model, sess_options=options, providers=list(plan.providers), enable_fallback=0)
    require_session_providers(plan, session.get_providers())
    return session


# The engine table's loader (serving.runners.runner_modules)
def load_in_process(conf: LocalServiceConf, count: int) -> list[OrtRunner]:
    return create_ort_runners(conf, [gpu_of(conf, i) for i in range(count)])


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> OrtRunner:
    """One instance with its own session, on GPU ``device_id`` (default: the first of ``devices``)."""
    return create_ort_runners(conf, [lone_gpu(conf, device_id)])[0]
