"""The configs a GPU check serves and loads, derived from configs/ocr_gpu.yml (the
shipped GPU config, as it is) by overrides:

* ``--device cpu``: every op on the CPU (device_type 0), one 1-thread instance;
* ``--engine NAME``: every op on that engine, without the keys another engine owns (and det
  at PaddleOCR's size where that drops ``mask_padding``);
* ``--instance-mode MODE``: every op in that mode (``process``: a process per op, to compare
  with the shipped one process per device);
* batching off: ``max_batch_size: 1`` on every op (the only difference from on);
* the rec pipeline: the config's rec op alone, fed one crop a request, with configs/rec.yml's
  params (width buckets: a lone crop padded as PaddleOCR pads it would batch only with
  crops of its exact width).
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from bench.lib.configs import apply_overrides, load_repo_config
from bench.lib.paths import cache_dir
from bench.lib.script import BenchError

CONFIG = "ocr_gpu"
REC_PARAMS_CONFIG = "rec"
BATCHING = ("on", "off")

# det's params where an engine cannot mask its padding (mask_padding): configs/ocr.yml's
UNPADDED_DET = {"size_buckets": [], "bucket_step": 32, "max_padding_ratio": 0}
# on the CPU one 1-thread instance per op: two servers (batching on and off) share a 2-core machine
CPU_OPS = {"device_type": 0, "devices": "", "instance_num": 1, "thread_num": 1, "cuda_graphs": False}


def check_config(
    device: str, engine: str | None = None, max_batch_size: int | None = None, instance_mode: str | None = None
) -> dict[str, Any]:
    """configs/ocr_gpu.yml for ``device`` (``cuda``: as shipped; ``cpu``), on ``engine`` when
    given, each op's max_batch_size at most ``max_batch_size`` and in ``instance_mode`` when given."""
    data = load_repo_config(CONFIG)
    if device == "cpu":
        data = apply_overrides(data, all_ops=CPU_OPS)
    if engine:
        data = with_engine(data, engine)
    if instance_mode:
        data = apply_overrides(data, all_ops={"instance_mode": instance_mode})
    if max_batch_size is not None:
        data = capped(data, max_batch_size)
    return data


def capped(data: Mapping[str, Any], max_batch_size: int) -> dict[str, Any]:
    """Every op's max_batch_size at most ``max_batch_size``."""
    ops = {name: batch_keys(op["local_service_conf"], max_batch_size) for name, op in data["op"].items()}
    return apply_overrides(data, ops=ops)


def batch_keys(svc: Mapping[str, Any], max_batch_size: int) -> dict[str, Any]:
    """``max_batch_size`` at most the cap, and the op's ``run_batch_sizes`` that still fit."""
    cap = min(svc.get("max_batch_size", 1), max_batch_size)
    keys: dict[str, Any] = {"max_batch_size": cap}
    if svc.get("run_batch_sizes"):
        keys["run_batch_sizes"] = [size for size in svc["run_batch_sizes"] if size <= cap]
    return keys


def with_engine(data: Mapping[str, Any], engine: str) -> dict[str, Any]:
    """Every op on ``engine``, each dropping the keys another engine owns (which ``engine``
    refuses away from their default); BenchError when it cannot run an op's device."""
    from serving.config.engines import ENGINES, foreign_keys

    if engine not in ENGINES:
        raise BenchError(f"--engine {engine}: not an engine of this checkout ({', '.join(ENGINES)})")
    out = copy.deepcopy(dict(data))
    for name, op in out["op"].items():
        svc = op["local_service_conf"]
        device_type = svc.get("device_type", 0)
        if device_type not in ENGINES[engine].precisions:
            raise BenchError(f"--engine {engine} does not run op {name}'s device_type {device_type}")
        masked = svc.get("mask_padding", False) and "mask_padding" in foreign_keys(engine)
        for key in foreign_keys(engine):
            svc.pop(key, None)
        if masked:  # without the masks, padding would change det's lines: pages at PaddleOCR's size
            op.setdefault("params", {}).update(UNPADDED_DET)
        svc["engine"] = engine
    return out


def batching_off(data: Mapping[str, Any]) -> dict[str, Any]:
    """The same config with every op's batches of one item."""
    ops = {name: batch_keys(op["local_service_conf"], 1) for name, op in data["op"].items()}
    return apply_overrides(data, ops=ops)


def rec_pipeline(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data``'s rec op as a pipeline of its own (``<name>_rec``), fed by the request."""
    rec = copy.deepcopy(data["op"]["rec"])
    rec["input_ops"] = []
    rec["params"] = dict(load_repo_config(REC_PARAMS_CONFIG)["op"]["rec"]["params"])
    return {**copy.deepcopy(dict(data)), "name": pipeline_names(data)["rec"], "op": {"rec": rec}}


def served_repositories(data: Mapping[str, Any]) -> dict[str, str]:
    """A repository folder per batching (``on``, ``off``) that one server serves: the OCR
    pipeline (``ocr.yml``: the curves load their ops from it) and the rec pipeline (``rec.yml``)."""
    return {
        batching: write_repository(data if batching == "on" else batching_off(data), batching) for batching in BATCHING
    }


def write_repository(data: Mapping[str, Any], tag: str, with_rec: bool = True) -> str:
    """A temp folder (under the bench's cache, never in the repo) holding ``data`` as ocr.yml
    and, ``with_rec``, its rec pipeline as rec.yml."""
    import yaml

    folder = tempfile.mkdtemp(prefix=f"batchline-gpu-check-{tag}-", dir=cache_dir("configs"))
    pipelines = [("ocr", dict(data))] + ([("rec", rec_pipeline(data))] if with_rec else [])
    for name, pipeline in pipelines:
        with open(os.path.join(folder, f"{name}.yml"), "w", encoding="utf-8") as f:
            yaml.safe_dump(pipeline, f, sort_keys=False, allow_unicode=True)
    return folder


def ocr_file(repository: str) -> str:
    """The OCR pipeline's file in a folder of :func:`served_repositories`."""
    return os.path.join(repository, "ocr.yml")


def pipeline_names(data: Mapping[str, Any]) -> dict[str, str]:
    """The name each pipeline is served under: ``{"ocr": ..., "rec": ...}``."""
    return {"ocr": str(data["name"]), "rec": f"{data['name']}_rec"}
