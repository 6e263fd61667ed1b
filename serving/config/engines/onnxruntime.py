"""``engine: onnxruntime``: ONNX Runtime on the model's ONNX form (the file ``engine: torch``
reads), through its CPU, CUDA or TensorRT execution provider. Its ``Session.run`` is
thread-safe and releases the GIL: thread instances share one session per device.
"""

from __future__ import annotations

from types import MappingProxyType

from serving.config.engines.base import Engine, EngineSettings, gpu_label, refuse_onednn_keys
from serving.config.errors import FieldProblem
from serving.paths import torch_model_files

# The CPU and CUDA providers run the fp32 model as it is (neither converts it to fp16);
# TensorRT builds fp16 kernels from it itself (trt_fp16_enable)
PRECISIONS = MappingProxyType({0: ("fp32",), 1: ("fp32",), 2: ("fp32", "fp16")})

INSTEAD = MappingProxyType(
    {
        0: "ONNX Runtime's CPU provider runs the fp32 model as it is: use fp32 (or engine: openvino for bf16)",
        1: "ONNX Runtime's CUDA provider runs the fp32 model as it is and converts nothing to lower precision: "
        "use fp32, or device_type 2 (TensorRT) for fp16, or engine: torch for fp16/bf16",
        2: "ONNX Runtime's TensorRT provider runs fp32 or fp16 (TensorRT's own fp16 kernels): use one of those",
    }
)


def check(conf: EngineSettings) -> None:
    """``engine: onnxruntime`` takes none of Paddle Inference's engine switches."""
    if conf.use_openvino:
        raise FieldProblem(
            "use_openvino", "selects Paddle Inference's embedded OpenVINO engine: drop it with engine: onnxruntime"
        )
    refuse_onednn_keys(conf, "onnxruntime")
    if conf.precision not in PRECISIONS[conf.device_type]:
        raise FieldProblem(
            "precision",
            f"{conf.precision} is not available with engine: onnxruntime on device_type {conf.device_type}: "
            f"{INSTEAD[conf.device_type]}",
        )


def device_label(conf: EngineSettings) -> str:
    return "cpu+onnxruntime" if conf.device_type == 0 else gpu_label(conf) + "+onnxruntime"


ENGINE = Engine(
    name="onnxruntime",
    runtime="ONNX Runtime",
    summary="ONNX Runtime (CPU, CUDA GPU or TensorRT: the model's ONNX form, one GIL-free session per device "
    "shared by its instances)",
    precisions=PRECISIONS,
    threads_overlap=True,
    # shared with engine: torch (the rewritten graph is plain ONNX)
    own_keys=MappingProxyType({"mask_padding": False}),
    loader="serving.runners.onnxruntime_runtime",
    model_files=torch_model_files,
    check=check,
    device_label=device_label,
)
