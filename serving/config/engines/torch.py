"""``engine: torch``: PyTorch on the CPU or a CUDA GPU, running the model built from ONNX (the
directory's own, or its Paddle program converted once). It releases the GIL and compiles
nothing per batch size.
"""

from __future__ import annotations

from types import MappingProxyType

from serving.config.engines.base import Engine, EngineSettings, gpu_label, refuse_onednn_keys
from serving.config.errors import FieldProblem
from serving.paths import torch_model_files

DEFAULT_COMPILE_BUDGET_S = 600.0  # torch_compile_budget_s's default (the schema takes it from here)
PRECISIONS = MappingProxyType({0: ("fp32", "bf16"), 1: ("fp32", "fp16", "bf16")})


def check(conf: EngineSettings) -> None:
    """``engine: torch`` takes none of Paddle Inference's engine switches, and no TensorRT."""
    if conf.device_type not in PRECISIONS:
        raise FieldProblem(
            "device_type",
            f"{conf.device_type} (TensorRT) is Paddle Inference's; engine: torch runs on device_type 0 (CPU) "
            "or 1 (CUDA GPU)",
        )
    if conf.use_openvino:
        raise FieldProblem(
            "use_openvino", "selects Paddle Inference's embedded OpenVINO engine: drop it with engine: torch"
        )
    refuse_onednn_keys(conf, "torch")
    if conf.cuda_graphs and conf.device_type != 1:
        raise FieldProblem("cuda_graphs", "needs a GPU (device_type 1): a CPU has no CUDA graphs; drop it")
    if conf.torch_compile_budget_s != DEFAULT_COMPILE_BUDGET_S and not conf.torch_compile:
        raise FieldProblem(
            "torch_compile_budget_s", "bounds torch_compile's compiling: set torch_compile: true, or drop it"
        )
    if conf.precision not in PRECISIONS[conf.device_type]:
        where = "on CPU (device_type 0)" if conf.device_type == 0 else "on a GPU"
        raise FieldProblem(
            "precision",
            f"{conf.precision} is not available with engine: torch {where} "
            f"({' or '.join(PRECISIONS[conf.device_type])})",
        )


ENGINE = Engine(
    name="torch",
    runtime="PyTorch",
    summary="PyTorch (CPU or CUDA GPU: the model's ONNX form as a torch module, no device read in a call; "
    "fp16/bf16 weights cast once; CUDA graphs per input shape on a GPU; TorchInductor per shape, in the "
    "background)",
    precisions=PRECISIONS,
    threads_overlap=True,
    own_keys=MappingProxyType(
        {
            "cuda_graphs": False,
            "torch_compile": False,
            "torch_compile_budget_s": DEFAULT_COMPILE_BUDGET_S,
            "mask_padding": False,
        }
    ),
    loader="serving.runners.torch_runtime",
    model_files=torch_model_files,
    check=check,
    device_label=lambda conf: "cpu+torch" if conf.device_type == 0 else gpu_label(conf) + "+torch",
    # a shape is captured (and sent to the compiler) on its second call: warm-up does it for the shapes it warms
    warmup_runs=lambda conf: 2 if conf.cuda_graphs or conf.torch_compile else 1,
)
