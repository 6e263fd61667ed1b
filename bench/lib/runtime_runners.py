"""The bench's OpenVINO Runtime runners for a profile's ``runtime`` ops: the
server's own engine (``engine: openvino``) on one instance.

fp32 and bf16 compile the op's own ``.pdmodel``; int8 first quantizes it with
NNCF on calibration inputs: rendered pages of another seed than the
evaluation pages, taken through the profile's shipped config up to the op
(so rec is calibrated on the crops det finds, padded as rec pads them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.lib.int8 import op_feeds, quantized_model
from bench.lib.ocr_chain import RuntimeRunnerFactory, StageResult, run_profile, stage_inputs
from bench.lib.precision_profiles import Profile


class RuntimeRunners:
    def __init__(self, calibration_images: Sequence[Any], *, threads: int, tag: str, crops: int):
        self.calibration_images = list(calibration_images)
        self.threads = threads
        self.tag = tag  # names the calibration set: part of a cached int8 model's key
        self.crops = crops  # calibration items for ops after the first (text crops)
        self._memo: dict[str, StageResult] = {}

    @property
    def tags(self) -> dict[str, str]:
        """What each runtime precision's models depend on, for stage identities."""
        return {"int8": self.tag}

    def for_profile(self, profile: Profile) -> RuntimeRunnerFactory:
        def make(op_name: str, op: Any, precision: str) -> Any:
            from serving.config.schema import LocalServiceConf
            from serving.paths import model_files
            from serving.runners.runner_modules import load_in_process

            model_dir = op.conf.local_service_conf.model_config
            if precision == "int8":
                program, _ = model_files(model_dir)
                model_dir = quantized_model(
                    program,
                    f"{profile.config}-{op_name}-{self.tag}-{self.crops}",
                    lambda: self._feeds(profile, op_name, op),
                )
            # an int8 IR keeps its unquantized layers in fp32 (the f32 hint), so a bf16 CPU mixes in no bf16
            conf = LocalServiceConf(
                model_config=model_dir,
                engine="openvino",
                thread_num=self.threads,
                precision="bf16" if precision == "bf16" else "fp32",
            )
            return load_in_process(conf, 1)[0]

        return make

    def _feeds(self, profile: Profile, op_name: str, op: Any) -> list[Any]:
        shipped = Profile("calibration", profile.config)
        upstream = run_profile(
            shipped, self.calibration_images, threads=self.threads, warm=0, memo=self._memo, stop_before=op_name
        )
        limit = self.crops if upstream else len(self.calibration_images)
        return op_feeds(op, stage_inputs(self.calibration_images, upstream), limit)
