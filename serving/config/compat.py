"""Paddle Serving compatibility: a pass over the raw mapping before validation that drops
keys meaning nothing here and folds aliases into their keys (both spellings: an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from serving.config.schema import OP_ALIASES, ServingConfig, device_type_value, is_int, is_number

# Paddle Serving keys that have no meaning here: accepted, logged once, dropped.
IGNORED_TOP_KEYS = frozenset({"grpc_gateway_port", "build_dag_each_worker"})
IGNORED_DAG_KEYS = frozenset({"is_thread_op", "retry", "client_type", "channel_recv_frist_arrive"})
IGNORED_OP_KEYS = frozenset(
    {
        "client_type",
        "fetch_list",
        "workdir",
        "server_endpoints",
        "client_config",
        "use_encryption_model",
        "encryption_key",  # Paddle Serving's key for a remote encrypted predictor (server_endpoints)
    }
)
IGNORED_LOCAL_SERVICE_KEYS = frozenset(
    {
        "client_type",
        "fetch_list",
        "workdir",
        "use_xpu",
        "use_lite",
        "use_ascend_cl",
        "use_encryption_model",
        "mkldnn_op_list",
        "mkldnn_bf16_op_list",
        "gpu_multi_stream",
    }
)
# Paddle Serving's switches folded into batchline's keys (_apply_use_trt, _apply_use_calib)
FOLDED_LOCAL_SERVICE_KEYS = frozenset({"use_trt", "use_calib"})
# Paddle Serving's separate /metrics server: dropped with a notice naming our /metrics URL
PROMETHEUS_DAG_KEYS = ("enable_prometheus", "prometheus_port")


@dataclass
class Notes:
    """What the Paddle Serving pass found, for one parse."""

    problems: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # dropped key paths
    notices: list[tuple[str, str]] = field(default_factory=list)  # (key path, what the user should know)
    renamed: dict[str, str] = field(default_factory=dict)  # our key path -> the alias the file used


def _drop_ignored(data: dict, ignored_keys: frozenset, prefix: str, notes: Notes) -> None:
    for key in list(data):
        if key in ignored_keys:
            data.pop(key)
            notes.ignored.append(prefix + str(key))


def _fold_aliases(op: dict, svc: Any, path: str, notes: Notes) -> None:
    for alias, target in OP_ALIASES.items():
        if alias not in op:
            continue
        value = op.pop(alias)
        if target.startswith("local_service_conf."):
            if not isinstance(svc, dict):
                continue  # local_service_conf itself is wrong; pydantic reports it
            holder, key = svc, target.split(".", 1)[1]
        else:
            holder, key = op, target
        if key in holder:
            both = f"given twice: as '{path}.{alias}' and '{path}.{target}'; keep one"
            notes.problems.append((f"{path}.{alias}", both))
            continue
        if alias == "auto_batching_timeout" and is_number(value):
            value = max(value, 0)  # Paddle Serving's -1: no wait
        if alias == "timeout" and is_int(value) and value <= 0:
            value = -1  # Paddle Serving: <= 0 means no limit
        holder[key] = value
        notes.renamed[f"{path}.{target}"] = f"{path}.{alias}"


def gpu_ids_given(devices: Any) -> bool:
    """True when ``devices`` names GPU ids (``"0"``, ``"0,1"``, ``0``): non-empty once spaces are gone."""
    if is_int(devices):
        return True
    return isinstance(devices, str) and devices.replace(" ", "") != ""


def resolve_device_type(svc: dict) -> None:
    """Paddle Serving's rule for a device left unset (``device_type`` -1, its default, or empty): the
    ``devices`` decide, GPU ids meaning ``device_type`` 1. Left out with no ``devices``: the CPU."""
    value = svc.get("device_type", -1)
    unset = value is None or (is_int(value) and value == -1)
    if unset and gpu_ids_given(svc.get("devices")):
        svc["device_type"] = 1
    elif unset and "device_type" in svc:
        svc["device_type"] = 0


def _apply_use_trt(svc: dict, path: str, notes: Notes) -> None:
    if "use_trt" not in svc:
        return
    use_trt = svc.pop("use_trt")
    device_type = device_type_value(svc.get("device_type", 0))
    if use_trt is True and is_int(device_type) and device_type >= 1:
        svc["device_type"] = 2
    else:
        notes.ignored.append(f"{path}.local_service_conf.use_trt")


def _apply_use_calib(svc: dict, path: str, notes: Notes) -> None:
    """Paddle Serving's ``use_calib`` is Paddle-TensorRT's calibration mode: ``tensorrt.use_calib_mode``."""
    if "use_calib" not in svc:
        return
    value = svc.pop("use_calib")
    key = f"{path}.local_service_conf.use_calib"
    if value is False:
        return  # the default
    if value is True and device_type_value(svc.get("device_type", 0)) != 2:
        notes.ignored.append(key)  # as in Paddle Serving: calibration is a TensorRT setting
        return
    trt = svc.get("tensorrt")
    if trt is None:
        # a new block must not replace local_service_conf's min_subgraph_size with its own default
        trt = {k: svc[k] for k in ("min_subgraph_size",) if k in svc}
    if not isinstance(trt, dict):
        return  # tensorrt itself is wrong; pydantic reports it
    if "use_calib_mode" in trt:
        both = f"given twice: as '{key}' and '{path}.local_service_conf.tensorrt.use_calib_mode'; keep one"
        notes.problems.append((key, both))
        return
    svc["tensorrt"] = {**trt, "use_calib_mode": value}
    notes.renamed[f"{path}.local_service_conf.tensorrt.use_calib_mode"] = key


def _drop_prometheus(data: dict, dag: dict, notes: Notes) -> None:
    """Type-checked, then dropped with a notice (a scrape aimed at ``prometheus_port`` would find nothing)."""
    given = {k: dag.pop(k) for k in PROMETHEUS_DAG_KEYS if k in dag}
    enable, port = given.get("enable_prometheus"), given.get("prometheus_port")
    if enable is not None and not isinstance(enable, bool):
        notes.problems.append(("dag.enable_prometheus", f"must be true or false, got {enable!r}"))
        return
    if port is not None and not (is_int(port) and 1 <= port <= 65535):
        notes.problems.append(("dag.prometheus_port", f"must be a port (1..65535), got {port!r}"))
        return
    http_port = data.get("http_port", ServingConfig.model_fields["http_port"].default)
    where = f"metrics are always served at /metrics on the HTTP port (http_port {http_port})"
    if port is not None:
        notes.notices.append(
            ("dag.prometheus_port", f"port {port} is not opened: {where}; point the Prometheus scrape there")
        )
    elif enable is True:
        notes.notices.append(("dag.enable_prometheus", f"{where}; the key changes nothing"))
    elif enable is False:
        notes.notices.append(("dag.enable_prometheus", f"{where}; false does not turn them off"))


def _normalize_op(name: str, op: Any, notes: Notes) -> Any:
    path = f"op.{name}"
    if op is None:
        op = {}
    if not isinstance(op, dict):
        return op
    op = dict(op)
    for key, hint in (("name", "an op's name is its key under 'op:'"), ("cls", "did you mean 'class'?")):
        if key in op:
            op.pop(key)
            notes.problems.append((f"{path}.{key}", f"unknown key ({hint})"))
    op["name"] = name
    _drop_ignored(op, IGNORED_OP_KEYS, path + ".", notes)
    svc = op.get("local_service_conf")
    if svc is None:
        svc = {}
    if isinstance(svc, dict):
        svc = dict(svc)
        _drop_ignored(svc, IGNORED_LOCAL_SERVICE_KEYS, path + ".local_service_conf.", notes)
        resolve_device_type(svc)
        _apply_use_trt(svc, path, notes)
        _apply_use_calib(svc, path, notes)
    _fold_aliases(op, svc, path, notes)
    op["local_service_conf"] = svc
    return op


def normalize(data: dict, default_name: str, notes: Notes) -> dict:
    """Copy of ``data`` with Paddle Serving keys dropped or folded, op names filled in."""
    data = dict(data)
    _drop_ignored(data, IGNORED_TOP_KEYS, "", notes)
    data.setdefault("name", default_name)
    if isinstance(data.get("dag"), dict):
        data["dag"] = dict(data["dag"])
        _drop_ignored(data["dag"], IGNORED_DAG_KEYS, "dag.", notes)
        _drop_prometheus(data, data["dag"], notes)
        if data["dag"].get("channel_size") == 0 and not isinstance(data["dag"]["channel_size"], bool):
            # Paddle Serving's 0: unbounded channels; here every channel is bounded (the default size)
            data["dag"].pop("channel_size")
            notes.notices.append(("dag.channel_size", "0 (unbounded in Paddle Serving): the default bound is used"))
    if isinstance(data.get("op"), dict):
        data["op"] = {name: _normalize_op(str(name), op, notes) for name, op in data["op"].items()}
    return data
