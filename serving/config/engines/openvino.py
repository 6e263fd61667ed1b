"""``engine: openvino``: OpenVINO Runtime, the CPU engine. It releases the GIL, a new batch
size costs little, and it binds threads to cores (its processes get CPU sets of their own).
"""

from __future__ import annotations

from types import MappingProxyType

from serving.config.engines.base import Engine, EngineSettings, refuse_onednn_keys
from serving.config.errors import FieldProblem
from serving.paths import openvino_model_file

PRECISIONS = MappingProxyType({0: ("fp32", "bf16")})


def check(conf: EngineSettings) -> None:
    """``engine: openvino`` takes none of Paddle Inference's engine switches."""
    if conf.device_type not in PRECISIONS:
        raise FieldProblem("engine", f"openvino is a CPU engine; device_type is {conf.device_type} (use device_type 0)")
    if conf.use_openvino:
        raise FieldProblem(
            "use_openvino",
            "selects Paddle Inference's embedded OpenVINO engine; with engine: openvino, "
            "OpenVINO Runtime runs the model itself: drop use_openvino",
        )
    refuse_onednn_keys(conf, "openvino")
    if conf.precision not in PRECISIONS[conf.device_type]:
        raise FieldProblem(
            "precision",
            f"{conf.precision} is not available with engine: openvino ({' or '.join(PRECISIONS[conf.device_type])}; "
            "an int8 model is an OpenVINO IR quantised beforehand, e.g. by NNCF, and runs with precision fp32)",
        )


ENGINE = Engine(
    name="openvino",
    runtime="OpenVINO Runtime",
    summary="OpenVINO Runtime (CPU only: GIL-free in-process instances sharing one copy of the weights)",
    precisions=PRECISIONS,
    threads_overlap=True,
    own_keys=MappingProxyType({"conv_kernels": "auto"}),
    loader="serving.runners.openvino_runtime",
    model_files=lambda model_dir: (openvino_model_file(model_dir),),
    check=check,
    pins_cores=lambda conf: conf.device_type == 0,
    device_label=lambda conf: "cpu+openvino-runtime",
)
