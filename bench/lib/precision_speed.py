"""int8 against fp32 per predictor call, at the bench's thread count, on fixed
shapes: det on one page-sized image, rec on a group of 6 crops (PaddleOCR's
rec group) at two widths. Three runners each: Paddle's embedded OpenVINO
engine in fp32 (what configs/ocr.yml ships), OpenVINO Runtime in fp32 on the
same model, and OpenVINO Runtime on the NNCF int8 model."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.lib.call_speed import interleaved_call_ms
from bench.lib.configs import write_config
from bench.lib.inprocess import load_op
from bench.lib.ocr_chain import profile_config
from bench.lib.precision_profiles import Profile
from bench.lib.runtime_runners import RuntimeRunners

SHAPES = (("det", ((1, 3, 640, 960),)), ("rec", ((6, 3, 48, 320), (6, 3, 48, 960))))


def int8_call_speed(
    runtime: RuntimeRunners, *, threads: int, calls: int, rounds: int = 4
) -> dict[str, dict[str, float]]:
    """``{"det 1x3x640x960": {runner: median ms per call}, ...}``."""
    from serving.runners.paddle_inference import PaddlePredictor

    profile = Profile("int8-speed", "ocr", runtime={"det": "int8", "rec": "int8"})
    config = profile_config(profile, threads)
    make = runtime.for_profile(profile)
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {}
    for op_name, shapes in SHAPES:
        op = load_op(write_config(config, tag="precision-speed"), op_name)
        runners: dict[str, Any] = {
            "paddle-openvino fp32": PaddlePredictor.load(op.conf.local_service_conf),
            "openvino fp32": make(op_name, op, "fp32"),
            "openvino int8": make(op_name, op, "int8"),
        }
        for shape in shapes:
            feed = {"x": rng.uniform(-1, 1, shape).astype(np.float32)}
            label = f"{op_name} {'x'.join(map(str, shape))}"
            out[label] = interleaved_call_ms(runners, feed, calls=calls, rounds=rounds)
        for runner in runners.values():
            runner.close()
    return out
