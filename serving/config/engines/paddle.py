"""``engine: paddle``: Paddle Inference, the reference engine and the GPU/TensorRT one. Its CPU
``run()`` holds the GIL, and a new batch size costs about twice a warm run (docs/batching.md).
"""

from __future__ import annotations

from types import MappingProxyType

from serving.config.engines.base import Engine, EngineSettings, gpu_label, powers_of_two
from serving.config.errors import FieldProblem
from serving.paths import model_files

ALL = ("fp32", "fp16", "int8", "bf16")
# fp16 needs a GPU; bf16 and int8 on CPU need oneDNN (or, bf16, use_openvino): check() says which
PRECISIONS = MappingProxyType({0: ("fp32", "bf16", "int8"), 1: ALL, 2: ALL})


def check(conf: EngineSettings) -> None:
    """Combinations Paddle cannot honour, refused here so ``batchline check`` names them."""
    if conf.use_openvino:
        if conf.device_type != 0:
            raise FieldProblem(
                "use_openvino",
                f"is a CPU engine; device_type is {conf.device_type} (use device_type 0, or drop use_openvino)",
            )
        if conf.use_mkldnn:
            raise FieldProblem("use_openvino", "and use_mkldnn are two alternative CPU engines: set only one of them")
        if conf.precision not in ("fp32", "bf16"):
            raise FieldProblem("precision", f"{conf.precision} is not available with use_openvino (fp32 or bf16)")
    elif conf.device_type == 0:
        if conf.precision not in PRECISIONS[0]:
            raise FieldProblem(
                "precision", f"{conf.precision} needs a GPU (device_type 1 or 2); use fp32 or bf16 on CPU"
            )
        if conf.precision in ("bf16", "int8") and not conf.use_mkldnn:
            raise FieldProblem(
                "precision", f"{conf.precision} on CPU needs use_mkldnn: true (or use_openvino: true for bf16)"
            )


def pins_cores(conf: EngineSettings) -> bool:
    """Only its embedded OpenVINO engine binds threads to cores (see serving.runners.cpu_plan)."""
    return conf.use_openvino and conf.device_type == 0


def device_label(conf: EngineSettings) -> str:
    if conf.device_type == 0:
        return "cpu+openvino" if conf.use_openvino else "cpu"
    return gpu_label(conf)


ENGINE = Engine(
    name="paddle",
    runtime="Paddle Inference",
    summary="Paddle Inference (CPU on oneDNN, plain kernels or its embedded OpenVINO engine; GPU; TensorRT)",
    precisions=PRECISIONS,
    threads_overlap=False,
    loader="serving.runners.paddle_inference",
    model_files=model_files,
    check=check,
    default_run_sizes=powers_of_two,
    pins_cores=pins_cores,
    device_label=device_label,
)
