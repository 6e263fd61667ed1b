"""``python -m bench.gpu_probe --prepare DIR``: the GPU check's handover (:mod:`.prepare`: the
ONNX cache, the wheels, the host check), with what the probe runs beyond the check's config
(cls's conversion; ERNIE carries its own inference.onnx in the checkout), held to
:data:`LIMIT_MIB` (issue 37: the probe's handover is at most 40 MiB)."""

from __future__ import annotations

from .prepare import prepare as prepare_handover
from .probe_models import MODELS, model_dir

LIMIT_MIB = 40


def prepare(folder: str) -> int:
    return prepare_handover(folder, [model_dir(m) for m in MODELS], LIMIT_MIB)
