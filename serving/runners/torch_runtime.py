"""PyTorch as an engine (``engine: torch``): the op's ONNX model
(:mod:`serving.runners.onnx_export`) run as an
:class:`~serving.runners.onnx_graph.OnnxGraph`, one module per device shared by
the instances placed there (torch modules keep no state between calls).

The module reads nothing back from the device in a call. At fp16/bf16 its
weights are cast once at load (batch norms folded first,
:mod:`serving.runners.step_precision`). On a GPU each instance has its own CUDA
stream and pinned host buffers, and with ``cuda_graphs`` replays a CUDA graph per
input shape (:mod:`serving.runners.bucket_cache`); ``fp32`` is strict (no TF32): a
GPU reads what the CPU reads. With ``torch_compile`` a shape's plan is compiled by
Inductor in the background (:mod:`serving.runners.plan_compiler`), one compiler per
module.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
import torch

from serving.config.schema import LocalServiceConf
from serving.runners.batch_norm_folding import fold_batch_norms
from serving.runners.bucket_cache import BucketCache, Form
from serving.runners.frozen_plan import CaptureRefused, InputSpec, freeze
from serving.runners.onnx_export import onnx_file
from serving.runners.onnx_graph import OnnxGraph
from serving.runners.padding_masks import load_masked
from serving.runners.paddle_inference import check_feed
from serving.runners.placement import gpu_of, lone_gpu
from serving.runners.plan_compiler import PlanCompiler
from serving.runners.step_precision import LOW_OPS

log = logging.getLogger(__name__)

COMPUTE_DTYPES: Mapping[str, torch.dtype | None] = MappingProxyType(
    {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
)


@dataclass(frozen=True)
class TorchPlan:
    """Where and how one instance runs."""

    device: str  # "cpu" or "cuda:N"
    compute_dtype: torch.dtype | None  # the weights' type: None for fp32
    precision: str
    cuda_graphs: bool = False
    torch_compile: bool = False

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def label(self) -> str:
        """The runner's ``device``: ``cpu:torch`` or ``gpu:N:torch``."""
        return "cpu:torch" if not self.on_gpu else f"gpu:{self.device.split(':')[1]}:torch"


def torch_plan(conf: LocalServiceConf, gpu: int | None) -> TorchPlan:
    """The plan of an instance of ``conf`` on GPU ``gpu`` (None: the CPU)."""
    device = "cpu" if conf.device_type == 0 or gpu is None else f"cuda:{gpu}"
    graphs = conf.cuda_graphs and device != "cpu"
    return TorchPlan(device, COMPUTE_DTYPES[conf.precision], conf.precision, graphs, conf.torch_compile)


def require_device(plan: TorchPlan) -> None:
    """Refuse a GPU plan where torch sees no such GPU."""
    if not plan.on_gpu:
        return
    index = int(plan.device.split(":")[1])
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if index >= visible:
        raise RuntimeError(
            f"engine: torch was asked for {plan.device}, but torch {torch.__version__} sees {visible} CUDA "
            f"device(s){'' if torch.version.cuda else ' (a CPU-only build)'}: use device_type 0, or a CUDA build "
            "of torch on a machine with the GPU"
        )


class TorchRunner:
    """One instance: a :class:`serving.op.Runner` on one device (on a GPU, one stream). Not
    thread-safe by design (its stream, buffers and CUDA graphs are its own): one batch at a time."""

    def __init__(self, module: OnnxGraph, plan: TorchPlan, compiler: PlanCompiler | None = None):
        self._module = module
        self._plan = plan
        self._device = torch.device(plan.device)
        self._stream = torch.cuda.Stream(self._device) if plan.on_gpu else None
        self._staging: dict[str, torch.Tensor] = {}  # input -> pinned host bytes
        self._uploaded: torch.cuda.Event | None = None  # the last run's copies out of the staging buffers
        self._compiler = compiler
        if compiler is not None:
            compiler.attach()
        self._buckets = self._bucket_cache() if plan.cuda_graphs or compiler is not None else None
        self.device = plan.label
        self.precision = plan.precision
        self.input_names = list(module.input_names)
        self.output_names = list(module.output_names)

    def _bucket_cache(self) -> BucketCache:
        capture = None
        if self._plan.cuda_graphs:
            from serving.runners.cuda_graphs import GraphCapturer

            assert self._stream is not None
            capture = GraphCapturer(self._device, self._stream)

        def build(bucket: tuple[InputSpec, ...], compiled: Any) -> Form:
            body = compiled if compiled is not None else freeze(self._module, bucket, self._device)
            return capture(body) if capture is not None else lambda inputs: body(*inputs)

        return BucketCache(self._module, build, compiler=self._compiler)

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch; outputs are fresh numpy arrays (floats as float32) in ``output_names`` order.
        Raises ValueError naming missing or unexpected feed names."""
        check_feed(self.input_names, feed)
        stream = torch.cuda.stream(self._stream) if self._stream is not None else nullcontext()
        with torch.inference_mode(), stream:
            inputs = self._upload(feed)
            outputs = self.forward(inputs)
            # .cpu() waits for this stream's work, and for nothing else on the device
            return [as_numpy(o) for o in outputs]

    def forward(self, inputs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """The computation on inputs already on the device: the shape's CUDA graph or compiled plan
        where it has one, else the module; no copy and no wait (what a benchmark times with CUDA events)."""
        return self._buckets(inputs) if self._buckets is not None else self._module(*inputs)

    def _upload(self, feed: Mapping[str, np.ndarray]) -> list[torch.Tensor]:
        hosts = [host_tensor(feed[name]) for name in self.input_names]
        if self._stream is None:
            return hosts
        if self._uploaded is not None:
            # the last run may have failed before it waited for its copies: they may still read the buffers
            self._uploaded.synchronize()
        uploaded = []
        for name, host in zip(self.input_names, hosts):
            staged = self._staged(name, host)
            staged.copy_(host)
            uploaded.append(staged.to(self._device, non_blocking=True))
        self._uploaded = torch.cuda.Event()
        self._uploaded.record(self._stream)
        return uploaded

    def _staged(self, name: str, like: torch.Tensor) -> torch.Tensor:
        """A pinned host tensor shaped as ``like``, on the instance's buffer for ``name``."""
        size = like.numel() * like.element_size()
        buffer = self._staging.get(name)
        if buffer is None or buffer.numel() < size:  # the old one's copies were waited for in _upload
            buffer = torch.empty(size, dtype=torch.uint8).pin_memory()
            self._staging[name] = buffer
        return buffer[:size].view(like.dtype).view(like.shape)

    @property
    def buckets(self) -> BucketCache | None:
        """The instance's forms per shape: CUDA graphs, compiled plans (None without ``cuda_graphs``
        or ``torch_compile``)."""
        return self._buckets

    @property
    def compiler(self) -> PlanCompiler | None:
        """The compiler this instance shares with the others on its device (``torch_compile``)."""
        return self._compiler

    def close(self) -> None:
        """Drop the CUDA graphs and pinned buffers (the module goes with its last instance, and
        the compiler stops with it)."""
        if self._uploaded is not None:
            self._uploaded.synchronize()
        if self._buckets is not None:
            self._buckets.clear()
        if self._compiler is not None:
            self._compiler.detach()
            self._compiler = None
        self._staging.clear()

    def __repr__(self) -> str:
        return f"TorchRunner(device={self.device!r}, precision={self.precision!r}, inputs={self.input_names})"


def host_tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array) if array.flags.writeable else np.array(array))


def as_numpy(t: torch.Tensor) -> np.ndarray:
    if t.is_floating_point() and t.dtype != torch.float32:
        t = t.float()
    return t.cpu().numpy()


def set_cpu_threads(conf: LocalServiceConf) -> None:
    if conf.device_type == 0 and torch.get_num_threads() != conf.thread_num:
        log.info("torch CPU threads: %d -> %d (per process)", torch.get_num_threads(), conf.thread_num)
        torch.set_num_threads(conf.thread_num)


def strict_fp32(plans: list[TorchPlan]) -> None:
    """No TF32 where an fp32 GPU instance runs: fp32 means the CPU's numbers (per process)."""
    if any(p.on_gpu and p.compute_dtype is None for p in plans):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def module_on(model: onnx.ModelProto, plan: TorchPlan) -> OnnxGraph:
    """The module of ``model`` on the plan's device, its weights in the plan's type; with CUDA
    graphs, refused here if its plan would read device data on the host (the node named)."""
    module = OnnxGraph(model).eval().to(plan.device)
    if plan.compute_dtype is not None:
        module.lower_precision(plan.compute_dtype, LOW_OPS)
    if plan.cuda_graphs:
        check_capturable(module, plan)
    return module


def check_capturable(module: OnnxGraph, plan: TorchPlan) -> None:
    """Freeze the module on ``meta`` tensors for a probe shape (batch 1, every other free axis
    64): a host read of device data fails there. A probe the model cannot take proves nothing
    and is only logged."""
    bucket = tuple(InputSpec(shape, dtype) for shape, dtype in module.input_specs(free=64, batch=1))
    try:
        freeze(module, bucket, "meta")
    except CaptureRefused as e:
        raise ValueError(f"cuda_graphs: {e}; set cuda_graphs: false for this op") from None
    except Exception as e:  # noqa: BLE001 - a shape the model refuses says nothing about capture
        log.warning("cuda_graphs: could not probe the model at %s (%s); shapes are checked as they come", bucket, e)


def create_torch_runners(conf: LocalServiceConf, gpus: list[int | None]) -> list[TorchRunner]:
    """One runner per entry of ``gpus`` (None: the CPU); one module per device."""
    if conf.model_config is None:
        raise ValueError("local_service_conf.model_config is required to build a predictor")
    plans = [torch_plan(conf, gpu) for gpu in gpus]
    for plan in plans:
        require_device(plan)
    start = time.perf_counter()
    path = onnx_file(conf.model_config)
    model = load_masked(path) if conf.mask_padding else onnx.load(path)
    set_cpu_threads(conf)
    strict_fp32(plans)
    dtype = COMPUTE_DTYPES[conf.precision]
    if dtype is not None:
        model, folded = fold_batch_norms(model)
        log.info("%s: %d batch norm(s) folded into their convolutions for %s", path, folded, conf.precision)
    modules: dict[str, OnnxGraph] = {}
    compilers: dict[str, PlanCompiler] = {}
    for plan in plans:
        if plan.device not in modules:
            modules[plan.device] = module_on(model, plan)
            if plan.torch_compile:
                name = f"{os.path.basename(conf.model_config.rstrip(os.sep))} on {plan.device}"
                budget = conf.torch_compile_budget_s
                compilers[plan.device] = PlanCompiler(modules[plan.device], plan.device, budget, name=name)
    runners = [TorchRunner(modules[plan.device], plan, compilers.get(plan.device)) for plan in plans]
    log.info(
        "loaded %s on torch %s in %.3fs (%d instance(s) on %s, %s, inputs=%s outputs=%s)",
        path,
        torch.__version__,
        time.perf_counter() - start,
        len(runners),
        ", ".join(sorted(modules)),
        conf.precision,
        runners[0].input_names,
        runners[0].output_names,
    )
    return runners


def load_in_process(conf: LocalServiceConf, count: int) -> list[TorchRunner]:
    return create_torch_runners(conf, [gpu_of(conf, i) for i in range(count)])


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> TorchRunner:
    """One instance with its own module, on GPU ``device_id`` (default: the first of ``devices``)."""
    return create_torch_runners(conf, [lone_gpu(conf, device_id)])[0]
