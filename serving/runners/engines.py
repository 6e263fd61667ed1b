"""The engine seam: which runtime builds an op's predictor instances.

``engine: paddle`` is Paddle Inference (in-process instances are clones that
share the weights; GPU instances round-robin over ``devices``);
``engine: openvino`` is OpenVINO Runtime (in-process instances are infer
requests on one compiled model). Both give :class:`serving.op.Runner`
objects; the child-process runner loads one instance with :func:`load_one`.
"""

from __future__ import annotations

from typing import Protocol

from serving.config.schema import LocalServiceConf
from serving.op import Runner
from serving.runners.openvino_runtime import create_openvino_runners
from serving.runners.paddle_inference import PaddlePredictor, create_predictors


class ModelRunner(Runner, Protocol):
    """A :class:`serving.op.Runner` built from a config: it also names its outputs and device."""

    output_names: list[str]
    device: str


def load_in_process(conf: LocalServiceConf, count: int) -> list[ModelRunner]:
    """``count`` instances of ``conf``'s model in this process, sharing weights."""
    if conf.engine == "openvino":
        return list(create_openvino_runners(conf, count))
    return list(create_predictors(conf, count))


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> ModelRunner:
    """One instance with its own weights (a predictor process's), on GPU ``device_id``."""
    if conf.engine == "openvino":
        return create_openvino_runners(conf, 1)[0]
    return PaddlePredictor.load(conf, device_id)
