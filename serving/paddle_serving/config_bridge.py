"""A Paddle Serving service's ``config.yml`` -> batchline's config, read by batchline's own
loader (so every key is checked as in any config, and Paddle Serving's keys are folded by
:mod:`serving.config.compat`). Each op of the graph gets its engine op class, its inputs, and
its worker model: ``concurrency`` workers, in threads (``is_thread_op: True``, Paddle Serving's
default) or in processes. What the script's ``Op(...)`` keywords set wins over the file, as
in Paddle Serving. An ``op:`` entry no op of the graph uses is dropped (Paddle Serving ignores it)."""

from __future__ import annotations

import copy
import difflib
import logging
import os
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from serving.config import compat
from serving.config.compat import resolve_device_type
from serving.config.documents import ConfigDocument
from serving.config.errors import model_fields
from serving.config.schema import DagConfig, LocalServiceConf, OpConfig, ServingConfig
from serving.config.schema.local_service import device_type_value
from serving.paddle_serving.model_folder import engine_folder
from serving.paddle_serving.operator import DAG_EXECUTOR, Op
from serving.paddle_serving.service_file import Service, ServiceFileError
from serving.paths import content_key, user_cache_dir

log = logging.getLogger(__name__)

STAGE = "serving.paddle_serving.stage:PaddleServingStage"
FIRST_STAGE = "serving.paddle_serving.stage:PaddleServingFirstStage"
#: Paddle Inference's CPU switches, which OpenVINO Runtime (the default engine on CPU) replaces
PADDLE_INFERENCE_SWITCHES = ("use_mkldnn", "mkldnn_cache_capacity", "use_openvino")
#: the ``Op(...)`` keywords that override the op's config entry, and the key each overrides
_KEYWORDS = {
    "concurrency": "concurrency",
    "_batch_size": "batch_size",
    "_auto_batching_timeout": "auto_batching_timeout",
    "_timeout": "timeout",
}


def _op_entry(service: Service, name: str, op: Op, raw: Any, thread_default: bool, source: str, digest: str) -> dict:
    if raw is not None and not isinstance(raw, dict):
        raise ServiceFileError(f"{source}: op.{name} must be a mapping")
    entry = copy.deepcopy(raw) if raw else {}
    for attr, key in _KEYWORDS.items():
        value = getattr(op, attr)
        if value is not None:
            entry[key] = value
    if op._server_endpoints or entry.get("server_endpoints"):
        raise ServiceFileError(
            f"{source}: op.{name}.server_endpoints: remote brpc/grpc predictors are not served here; give the op "
            "local_service_conf.model_config (its model runs in batchline's engine)"
        )
    entry.pop("server_endpoints", None)
    svc = entry.get("local_service_conf")
    svc = dict(svc) if isinstance(svc, dict) else {}
    fetch = op._fetch_names if op._fetch_names is not None else svc.get("fetch_list", entry.get("fetch_list"))
    thread_op = bool(entry.pop("is_thread_op", thread_default))
    workers = entry.get("concurrency", 1)
    model = svc.get("model_config")
    if isinstance(model, str) and "://" not in model:
        folder = os.path.join(os.path.dirname(source), model)
        if os.path.isdir(folder):  # Paddle Serving's other file names, linked to the ones our engines read
            svc["model_config"] = engine_folder(folder, user_cache_dir("paddle_serving"))
    resolve_device_type(svc)
    _gpu_or_cpu(svc, f"op.{name}.local_service_conf", source)
    _cpu_precision(svc, f"op.{name}.local_service_conf", source)
    _trt_dynamic_shapes(svc, op.dynamic_shape_info, f"op.{name}.local_service_conf", source)
    fallback = _default_engine(svc, f"op.{name}.local_service_conf", source)
    svc.setdefault("instance_mode", "thread" if thread_op else "process")
    batch = entry.get("batch_size", 1)
    if isinstance(batch, int) and not isinstance(batch, bool) and batch > 1:
        # Paddle Serving's auto-batching waits for batch_size requests or the timeout; batchline's
        # adaptive policy (which may start a batch early) is one key away
        svc.setdefault("batching_policy", "fixed")
    svc.setdefault("instance_num", workers)
    entry["local_service_conf"] = svc
    inputs = service.inputs[name]
    fed_by_request = DAG_EXECUTOR in inputs
    if fed_by_request and len(inputs) > 1:
        raise ServiceFileError(
            f"{source}: op {name!r} takes the request and other ops; batchline takes one or the other"
        )
    entry["class"] = FIRST_STAGE if fed_by_request else STAGE
    entry["input_ops"] = [] if fed_by_request else list(inputs)
    entry["params"] = {
        "script": service.script,
        "script_args": list(service.args),
        "script_digest": digest,
        "op": name,
        "thread_op": thread_op,
        "fetch_list": fetch,
        "engine_fallback": fallback,
    }
    return entry


def _on_cpu(svc: dict) -> bool:
    return device_type_value(svc.get("device_type", 0)) == 0


def paddle_sees_a_gpu() -> bool:
    """Whether Paddle Inference here can run on a GPU: a CUDA build (``paddlepaddle-gpu``) that sees one.
    Without that package nothing is imported (importing Paddle costs this process about 300 MB)."""
    try:
        version("paddlepaddle-gpu")
    except PackageNotFoundError:
        return False
    try:
        import paddle
    except ImportError:
        return False
    return bool(paddle.device.is_compiled_with_cuda()) and paddle.device.cuda.device_count() > 0


def _gpu_or_cpu(svc: dict, path: str, source: str) -> None:
    """A GPU op (``device_type`` 1 or 2) where Paddle cannot reach one runs on the CPU, with a warning,
    as Paddle Serving's does on a CPU build of Paddle (Paddle logs "Please use PaddlePaddle with GPU
    version." and goes on): a service written for a GPU still answers on a CPU-only machine. An op
    that names an engine other than Paddle Inference is left to that engine."""
    if _on_cpu(svc) or svc.get("engine", "paddle") != "paddle" or paddle_sees_a_gpu():
        return
    log.warning(
        "%s: %s: device_type %s (devices %r) asks for a GPU, and Paddle here sees none (a CPU build, or no GPU "
        "visible): it runs on the CPU, as Paddle Serving does",
        source,
        path,
        svc.get("device_type"),
        svc.get("devices", ""),
    )
    svc["device_type"] = 0
    svc["devices"] = ""


def _trt_dynamic_shapes(svc: dict, info: Any, path: str, source: str) -> None:
    """An op's ``set_dynamic_shape_info()`` (``{"min_input_shape": {name: shape}, "max_input_shape": ...,
    "opt_input_shape": ...}``), which Paddle Serving hands to Paddle-TensorRT with ``device_type: 2``:
    ``tensorrt.dynamic_shape`` of the op, unless its config gives one. Names not in all three are left out."""
    if device_type_value(svc.get("device_type", 0)) != 2 or not isinstance(info, dict) or not info:
        return
    trt = svc.get("tensorrt")
    if trt is None:  # a new block keeps the file's min_subgraph_size, as use_calib's does (compat.py)
        trt = {k: svc[k] for k in ("min_subgraph_size",) if k in svc}
    if not isinstance(trt, dict) or "dynamic_shape" in trt:
        return  # the config's own (or a wrong block, which the loader reports)
    ranges = [info.get(f"{end}_input_shape") or {} for end in ("min", "opt", "max")]
    names = [n for n in ranges[0] if all(n in r for r in ranges[1:])]
    left_out = sorted(set().union(*ranges) - set(names))
    if left_out:
        log.info("%s: %s: dynamic shapes without a min, opt and max left out: %s", source, path, left_out)
    trt["dynamic_shape"] = {n: dict(zip(("min", "opt", "max"), (list(r[n]) for r in ranges))) for n in names}
    svc["tensorrt"] = trt


def _cpu_precision(svc: dict, path: str, source: str) -> None:
    """Paddle Serving runs ``fp16`` and ``int8`` on the CPU as ``fp32`` (its local predictor sets neither
    there; int8 with a warning), so a script's answers stay its answers: fp32 here too."""
    precision = svc.get("precision")
    if _on_cpu(svc) and isinstance(precision, str) and precision.strip().lower() in ("fp16", "int8"):
        log.info("%s: %s: precision %s runs as fp32 on the CPU, as in Paddle Serving", source, path, precision)
        svc["precision"] = "fp32"


def _default_engine(svc: dict, path: str, source: str) -> bool:
    """On CPU, OpenVINO Runtime unless the file names an engine: it runs the same Paddle model
    faster. Paddle Inference's own switches (oneDNN, its embedded OpenVINO) then mean nothing.
    True when chosen so: a model OpenVINO cannot read then falls back to Paddle Inference."""
    if "engine" in svc or not svc.get("model_config") or not _on_cpu(svc):
        return False
    if str(svc.get("precision", "fp32")).lower() not in ("fp32", "bf16"):
        return False  # int8 / fp16 on CPU are Paddle Inference's
    svc["engine"] = "openvino"
    svc["device_type"] = 0
    dropped = [key for key in PADDLE_INFERENCE_SWITCHES if svc.pop(key, None) is not None]
    if dropped:
        log.info("%s: %s: engine openvino (the default on CPU); Paddle Inference's %s dropped", source, path, dropped)
    return True


def service_config(service: Service, source: str) -> dict:
    """batchline's config mapping for ``service`` (``source``: the config file, for messages)."""
    data = copy.deepcopy(service.config)
    dag = data.get("dag")
    thread_default = bool(dag.get("is_thread_op", True)) if isinstance(dag, dict) else True
    ops = data.get("op") or {}
    if not isinstance(ops, dict):
        raise ServiceFileError(f"{source}: 'op' must be a mapping")
    unused = sorted(set(ops) - set(service.ops))
    if unused:
        log.info("%s: op entries no op of the graph uses (ignored, as Paddle Serving does): %s", source, unused)
    digest = content_key((service.script,))  # in the config: a reload rebuilds a pipeline whose script changed
    dropped = _drop_unknown_keys(data, ops, service.ops, source)
    data["op"] = {
        name: _op_entry(service, name, op, ops.get(name), thread_default, source, digest)
        for name, op in service.ops.items()
    }
    if service.name:
        data["name"] = service.name
    if dropped:
        log.warning(
            "%s: keys batchline does not know, ignored as Paddle Serving ignores them: %s", source, "; ".join(dropped)
        )
    return data


def _keys(model: Any, *more: frozenset[str] | tuple[str, ...]) -> frozenset[str]:
    """The keys ``model`` takes in a file, and ``more``."""
    fields = model_fields(model) or {}
    known = {f.alias or name for name, f in fields.items()} | set(getattr(model, "yaml_extra_keys", ()))
    for keys in more:
        known |= set(keys)
    return frozenset(known)


def _drop(mapping: Any, known: frozenset[str], path: str, dropped: list[str]) -> None:
    if not isinstance(mapping, dict):
        return  # not a mapping: the loader says so
    for key in [k for k in mapping if k not in known]:
        mapping.pop(key)
        close = difflib.get_close_matches(str(key), known, n=1)
        dropped.append(f"{path}{key}" + (f" (did you mean {close[0]!r}?)" if close else ""))


def _drop_unknown_keys(data: dict, ops: dict, graph_ops: Any, source: str) -> list[str]:
    """Paddle Serving reads the keys it knows and passes over the rest, so a ``config.yml`` that starts there
    may hold keys no part of batchline reads (another tool's, a stale one, a misspelt one): they are dropped,
    named in one warning, where a batchline config refuses them."""
    dropped: list[str] = []
    _drop(data, _keys(ServingConfig, compat.IGNORED_TOP_KEYS), "", dropped)
    _drop(data.get("dag"), _keys(DagConfig, compat.IGNORED_DAG_KEYS, compat.PROMETHEUS_DAG_KEYS), "dag.", dropped)
    op_keys = _keys(OpConfig, compat.IGNORED_OP_KEYS)
    svc_keys = _keys(LocalServiceConf, compat.IGNORED_LOCAL_SERVICE_KEYS, compat.FOLDED_LOCAL_SERVICE_KEYS)
    for name in graph_ops:
        entry = ops.get(name)
        _drop(entry, op_keys, f"op.{name}.", dropped)
        if isinstance(entry, dict):
            _drop(entry.get("local_service_conf"), svc_keys, f"op.{name}.local_service_conf.", dropped)
    return dropped


def service_document(service: Service, config_file: str) -> ConfigDocument:
    """The service as a config document batchline's loader validates (paths relative to the script's folder)."""
    return ConfigDocument(config_file, config_file, service_config(service, config_file))
