"""config.yml -> typed, validated objects, parsed once at startup.

The file format is Paddle Serving's pipeline ``config.yml`` where the two
overlap (see docs/CONFIG.md). Every problem becomes a :class:`ConfigError`
whose lines read ``<file>: <key.path>: <message>``. Parsing happens in four
steps:

1. YAML with a loader that rejects duplicate mapping keys (config_yaml.py);
2. a Paddle Serving pass: drop keys that mean nothing here (logged once),
   fold op-level aliases (``batch_size`` ...) into their real keys;
3. pydantic field validation (unknown keys, types, ranges, model dirs),
   errors phrased by config_errors.py;
4. op classes, op ``params`` and the DAG.

``LocalServiceConf`` is a pydantic *dataclass*, not a ``BaseModel``: its
Paddle Serving field ``model_config`` would collide with pydantic's reserved
``BaseModel.model_config``.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from serving.config_errors import FILE_KEY, ROOT_KEY, ConfigError, validation_problems
from serving.config_errors import FieldProblem as _FieldProblem
from serving.config_yaml import load_yaml as _load_yaml
from serving.dag import Dag, DagError

logger = logging.getLogger(__name__)

PKG_SCHEME = "pkg://"
NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
MODEL_GRAPH_FILES = ("inference.json", "inference.pdmodel")
MODEL_PARAMS_FILE = "inference.pdiparams"

# Paddle Serving keys that have no meaning here: accepted, logged once, dropped.
IGNORED_TOP_KEYS = frozenset({"rpc_port", "grpc_gateway_port", "build_dag_each_worker"})
IGNORED_DAG_KEYS = frozenset({"is_thread_op", "retry", "client_type", "channel_recv_frist_arrive"})
IGNORED_OP_KEYS = frozenset({
    "client_type", "fetch_list", "workdir", "server_endpoints", "client_config", "use_encryption_model",
})
IGNORED_LOCAL_SERVICE_KEYS = frozenset({
    "client_type", "fetch_list", "workdir", "use_xpu", "use_lite", "use_ascend_cl", "use_calib",
    "use_encryption_model", "mkldnn_op_list", "mkldnn_bf16_op_list", "gpu_multi_stream",
})
# Paddle Serving op-level spellings -> our key (relative to the op).
OP_ALIASES = MappingProxyType({
    "concurrency": "local_service_conf.concurrency",
    "batch_size": "local_service_conf.max_batch_size",
    "auto_batching_timeout": "local_service_conf.max_queue_delay",
    "timeout": "timeout_ms",
})
DEVICE_TYPE_NAMES = MappingProxyType({"cpu": 0, "gpu": 1, "trt": 2, "tensorrt": 2})
# ---------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------
def resolve_pkg_path(spec: str, base_dir: str | os.PathLike | None = None) -> str:
    """Absolute path for ``spec``.

    ``pkg://<package>/<rel path>`` resolves inside the installed package
    (found with ``importlib.util.find_spec``, without importing it when it
    is top-level). A plain relative path is taken relative to ``base_dir``
    (the config file's directory) or else the working directory.
    Raises ValueError when the package is not installed.
    """
    spec = os.fspath(spec)
    if spec.startswith(PKG_SCHEME):
        package, _, rel = spec[len(PKG_SCHEME):].partition("/")
        if not package:
            raise ValueError(f"bad package path {spec!r}: expected pkg://<package>/<path>")
        try:
            found = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise ValueError(f"package {package!r} of {spec!r} is not installed")
        locations = list(found.submodule_search_locations or [])
        if not locations:
            raise ValueError(f"{package!r} of {spec!r} is a module, not a package")
        for location in locations:
            candidate = os.path.join(location, rel)
            if os.path.exists(candidate):
                return os.path.abspath(candidate)
        return os.path.abspath(os.path.join(locations[0], rel))
    path = os.path.expanduser(spec)
    if not os.path.isabs(path) and base_dir is not None:
        path = os.path.join(os.fspath(base_dir), path)
    return os.path.abspath(path)


def _checked_model_dir(value: str, base_dir: str | None) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    path = resolve_pkg_path(value, base_dir)
    if not os.path.exists(path):
        raise ValueError(f"model directory not found: {path}")
    if not os.path.isdir(path):
        raise ValueError(f"not a directory: {path}")
    if not any(os.path.isfile(os.path.join(path, f)) for f in MODEL_GRAPH_FILES):
        raise ValueError(f"{path} has no {' or '.join(MODEL_GRAPH_FILES)}")
    if not os.path.isfile(os.path.join(path, MODEL_PARAMS_FILE)):
        raise ValueError(f"{path} has no {MODEL_PARAMS_FILE}")
    return path


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _device_type_value(value: Any) -> Any:
    """``'cpu'``/``'gpu'``/``'trt'`` -> 0/1/2; other values unchanged."""
    if isinstance(value, str) and value.strip().lower() in DEVICE_TYPE_NAMES:
        return DEVICE_TYPE_NAMES[value.strip().lower()]
    return value


class TrtShape(BaseModel):
    """TensorRT dynamic-shape range of one input."""

    model_config = ConfigDict(extra="forbid", strict=True)
    min: list[int]
    opt: list[int]
    max: list[int]

    @model_validator(mode="after")
    def _ordered(self) -> "TrtShape":
        if not len(self.min) == len(self.opt) == len(self.max):
            raise ValueError("min, opt and max must have the same length")
        for lo, mid, hi in zip(self.min, self.opt, self.max):
            if not lo <= mid <= hi:
                raise ValueError(
                    f"need min <= opt <= max in every dimension, got {self.min}, {self.opt}, {self.max}")
        return self


class TensorRTConf(BaseModel):
    """Paddle-TensorRT engine settings (``device_type: 2``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    workspace_size: int = Field(1 << 30, ge=1)
    min_subgraph_size: int = Field(3, ge=0)
    use_static: bool = False
    use_calib_mode: bool = False
    dynamic_shape: dict[str, TrtShape] = Field(default_factory=dict)


@pydantic_dataclass(config=ConfigDict(extra="forbid"))
class LocalServiceConf:
    """Predictor and batcher settings of one op (``op.<name>.local_service_conf``).

    Strict per field: a dataclass that is strict as a whole refuses mappings.
    """

    model_config: Optional[str] = Field(None, strict=True)
    device_type: int = Field(0, strict=True)
    devices: str = Field("", strict=True)
    thread_num: int = Field(2, ge=1, strict=True)
    ir_optim: bool = Field(True, strict=True)
    use_mkldnn: bool = Field(False, strict=True)
    mkldnn_cache_capacity: int = Field(0, ge=0, strict=True)
    # CPU: run the whole model in Paddle Inference's OpenVINO engine instead of
    # its oneDNN kernels (an alternative to use_mkldnn; fp32 or bf16)
    use_openvino: bool = Field(False, strict=True)
    precision: Literal["fp32", "fp16", "int8", "bf16"] = "fp32"
    mem_optim: bool = Field(True, strict=True)
    min_subgraph_size: int = Field(3, ge=0, strict=True)
    gpu_mem_mb: int = Field(500, ge=1, strict=True)
    max_batch_size: int = Field(1, ge=1, strict=True)
    max_queue_delay: float = Field(0.0, ge=0, strict=True)
    preferred_batch_size: list[int] = Field(default_factory=list, strict=True)
    # predictor calls are made only at these batch sizes (a larger sub-batch is
    # split, largest first), so oneDNN sees a few repeating shapes; None = powers
    # of two up to max_batch_size, [] = any size
    run_batch_sizes: Optional[list[int]] = Field(None, strict=True)
    batching_policy: Literal["adaptive", "fixed"] = "adaptive"
    # when several instances are idle, cut a due batch into equal parts, one per
    # idle instance (null: on for instance_mode process, whose instances run in parallel)
    spread_batches: Optional[bool] = Field(None, strict=True)
    concurrency: int = Field(1, ge=1, strict=True)
    instance_num: int = Field(1, ge=1, strict=True)
    instance_mode: Literal["thread", "process"] = "thread"
    max_body_size: int = Field(67108864, ge=1, strict=True)
    tensorrt: Optional[TensorRTConf] = None

    @field_validator("model_config")
    @classmethod
    def _model_dir(cls, value: Optional[str], info) -> Optional[str]:
        if value is None:
            return None
        base_dir = (info.context or {}).get("base_dir")
        return _checked_model_dir(value, base_dir)

    @field_validator("device_type", mode="before")
    @classmethod
    def _device_type(cls, value: Any) -> Any:
        value = _device_type_value(value)
        if isinstance(value, str):
            raise ValueError(f"must be 0 (cpu), 1 (gpu), 2 (gpu+tensorrt) or 'cpu'/'gpu'/'trt', got {value!r}")
        if _is_int(value) and value not in (0, 1, 2):
            raise ValueError(f"device_type {value} is not supported; use 0 (cpu), 1 (gpu) or 2 (gpu+tensorrt)")
        return value

    @field_validator("devices", mode="before")
    @classmethod
    def _devices(cls, value: Any) -> Any:
        if _is_int(value):
            value = str(value)
        if value is None:
            value = ""
        if isinstance(value, str):
            value = value.replace(" ", "")
            if value and not re.fullmatch(r"\d+(,\d+)*", value):
                raise ValueError(f"must be GPU ids separated by commas like '0,1', got {value!r}")
        return value

    @field_validator("precision", mode="before")
    @classmethod
    def _precision(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("preferred_batch_size", "run_batch_sizes", mode="before")
    @classmethod
    def _preferred_list(cls, value: Any) -> Any:
        if value is None:
            return []
        if _is_int(value):
            return [value]
        return value

    @field_validator("preferred_batch_size")
    @classmethod
    def _preferred_positive(cls, value: list[int]) -> list[int]:
        bad = [v for v in value if v < 1]
        if bad:
            raise ValueError(f"sizes must be >= 1, got {bad[0]}")
        return value

    @model_validator(mode="after")
    def _one_cpu_engine(self) -> "LocalServiceConf":
        if self.use_openvino:
            if self.device_type != 0:
                raise _FieldProblem("use_openvino", f"is a CPU engine; device_type is {self.device_type} "
                                                    "(use device_type 0, or drop use_openvino)")
            if self.use_mkldnn:
                raise _FieldProblem("use_openvino", "and use_mkldnn are two alternative CPU engines: "
                                                    "set only one of them")
            if self.precision not in ("fp32", "bf16"):
                raise _FieldProblem("precision", f"{self.precision} is not available with use_openvino "
                                                 "(fp32 or bf16)")
        return self

    @model_validator(mode="after")
    def _preferred_within_max(self) -> "LocalServiceConf":
        too_big = [v for v in self.preferred_batch_size if v > self.max_batch_size]
        if too_big:
            raise _FieldProblem(
                "preferred_batch_size",
                f"{too_big[0]} is larger than max_batch_size {self.max_batch_size}",
            )
        self.preferred_batch_size = sorted(set(self.preferred_batch_size))
        if self.run_batch_sizes:
            bad = [v for v in self.run_batch_sizes if not 1 <= v <= self.max_batch_size]
            if bad:
                raise _FieldProblem("run_batch_sizes", f"{bad[0]} is not between 1 and max_batch_size "
                                                       f"{self.max_batch_size}")
        return self

    @property
    def predictor_batch_sizes(self) -> list[int]:
        """Batch sizes predictor calls are made at (ascending; always has 1), or [] for any size."""
        if self.run_batch_sizes == []:
            return []
        if self.run_batch_sizes is None:
            sizes = {1 << k for k in range(self.max_batch_size.bit_length()) if 1 << k <= self.max_batch_size}
            sizes.add(self.max_batch_size)
        else:
            sizes = set(self.run_batch_sizes)
        return sorted(sizes | {1})

    @property
    def spreads_batches(self) -> bool:
        """``spread_batches``, with null meaning: only process instances (they overlap)."""
        if self.spread_batches is not None:
            return self.spread_batches
        return self.instance_mode == "process" and self.instance_num > 1

    @property
    def device_ids(self) -> list[int]:
        """``devices`` as GPU ids: ``"0,1"`` -> ``[0, 1]``, ``""`` -> ``[]``."""
        return [int(d) for d in self.devices.split(",") if d.strip()]

    @property
    def device_label(self) -> str:
        """``"cpu"``, ``"cpu+openvino"``, ``"gpu"``, ``"gpu:0,1"`` or ``"gpu:0+trt"``."""
        if self.device_type == 0:
            return "cpu+openvino" if self.use_openvino else "cpu"
        label = "gpu" + (f":{self.devices}" if self.devices else "")
        return label + ("+trt" if self.device_type == 2 else "")


class OpConfig(BaseModel):
    """One op of the graph (``op.<name>``)."""

    # Not strict as a whole: strict mode would refuse a mapping for the
    # LocalServiceConf dataclass; each scalar field is strict instead.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    yaml_hidden_keys: ClassVar[frozenset] = frozenset({"name"})
    yaml_extra_keys: ClassVar[frozenset] = frozenset(OP_ALIASES)

    name: str = Field(strict=True)
    cls: str = Field(alias="class", strict=True)
    input_ops: list[str] = Field(default_factory=list, strict=True)
    params: dict[str, Any] = Field(default_factory=dict, strict=True)
    local_service_conf: LocalServiceConf = Field(default_factory=LocalServiceConf)
    timeout_ms: Optional[int] = Field(None, strict=True)
    retry: int = Field(1, ge=0, strict=True)

    _params_model: Optional[BaseModel] = PrivateAttr(default=None)
    _op_class: Optional[type] = PrivateAttr(default=None)

    @field_validator("input_ops", "params", "local_service_conf", mode="before")
    @classmethod
    def _empty_is_default(cls, value: Any, info) -> Any:
        if value is None:  # a YAML key written with no value
            return {"input_ops": [], "params": {}, "local_service_conf": {}}[info.field_name]
        if info.field_name == "local_service_conf" and isinstance(value, Mapping):
            return dict(value)
        return value

    @field_validator("timeout_ms", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        if _is_int(value) and value == -1:
            return None
        if _is_int(value) and value < 1:
            raise ValueError(f"must be >= 1 (ms), or -1 for no limit, got {value}")
        return value

    @property
    def params_model(self) -> BaseModel | None:
        """``params`` validated against the op class's ``Params`` model."""
        return self._params_model

    @property
    def op_class(self) -> type | None:
        """The resolved :class:`serving.op.Op` subclass."""
        return self._op_class


class TracerConf(BaseModel):
    """Periodic per-op summary in the log; ``interval_s: 0`` (or negative) turns it off."""

    model_config = ConfigDict(extra="forbid", strict=True)
    interval_s: float = Field(0.0, ge=0)

    @field_validator("interval_s", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        if _is_number(value) and value < 0:
            return 0.0  # Paddle Serving's -1
        return value


class DagConfig(BaseModel):
    """Engine-wide settings (``dag:``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    channel_size: int = Field(64, ge=1)
    request_timeout_ms: int = Field(30000, ge=1)
    max_queue_size: int = Field(512, ge=1)
    use_profile: bool = False
    tracer: TracerConf = Field(default_factory=TracerConf)
    priority_levels: int = Field(1, ge=1, le=16)
    priority_max_wait_ms: int = Field(1000, ge=0)
    shutdown_timeout_s: float = Field(30.0, ge=0)

    @field_validator("tracer", mode="before")
    @classmethod
    def _tracer(cls, value: Any) -> Any:
        return {} if value is None else value


class ServingConfig(BaseModel):
    """A whole config file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(pattern=NAME_PATTERN)
    http_port: int = Field(9999, ge=1, le=65535)
    host: str = "127.0.0.1"
    worker_num: int = Field(16, ge=1)
    auth_token: Optional[str] = None
    max_image_pixels: int = Field(40000000, ge=1)
    max_inputs_per_request: int = Field(64, ge=1)
    dag: DagConfig = Field(default_factory=DagConfig)
    op: dict[str, OpConfig]

    _source_path: str = PrivateAttr(default="<config>")
    _dag_graph: Optional[Dag] = PrivateAttr(default=None)

    @field_validator("dag", mode="before")
    @classmethod
    def _dag(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("op")
    @classmethod
    def _some_ops(cls, value: dict[str, OpConfig]) -> dict[str, OpConfig]:
        if not value:
            raise ValueError("must define at least one op")
        return value

    @property
    def source_path(self) -> str:
        """The file this config came from (absolute), or the ``source`` label."""
        return self._source_path

    @property
    def ops(self) -> list[OpConfig]:
        """Ops in config order."""
        return list(self.op.values())

    @property
    def dag_graph(self) -> Dag:
        """The op graph (built once)."""
        if self._dag_graph is None:
            self._dag_graph = Dag({op.name: op.input_ops for op in self.ops})
        return self._dag_graph

    def op_table(self) -> list[dict[str, Any]]:
        """One row per op (config order): what ``batchline check`` and ``GET /{name}/config`` show."""
        rows = []
        for op in self.ops:
            svc = op.local_service_conf
            rows.append({
                "op": op.name,
                "class": op.cls,
                "inputs": list(op.input_ops),
                "max_batch_size": svc.max_batch_size,
                "max_queue_delay": svc.max_queue_delay,
                "preferred_batch_size": list(svc.preferred_batch_size),
                "batching_policy": svc.batching_policy,
                "concurrency": svc.concurrency,
                "instance_num": svc.instance_num,
                "instance_mode": svc.instance_mode,
                "device": svc.device_label,
                "precision": svc.precision,
                "model": svc.model_config or "-",
            })
        return rows


# ---------------------------------------------------------------------------
# Paddle Serving pass: ignored keys, aliases
# ---------------------------------------------------------------------------
@dataclass
class _Notes:
    """What the Paddle Serving pass found, for one parse."""

    problems: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # dropped key paths
    renamed: dict[str, str] = field(default_factory=dict)  # our key path -> the alias the file used


def _drop_ignored(data: dict, ignored_keys: frozenset, prefix: str, notes: _Notes) -> None:
    for key in list(data):
        if key in ignored_keys:
            data.pop(key)
            notes.ignored.append(prefix + str(key))


def _fold_aliases(op: dict, svc: Any, path: str, notes: _Notes) -> None:
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
        if alias == "auto_batching_timeout" and _is_number(value):
            value = max(value, 0)  # Paddle Serving's -1: no wait
        if alias == "timeout" and _is_int(value) and value <= 0:
            value = -1  # Paddle Serving: <= 0 means no limit
        holder[key] = value
        notes.renamed[f"{path}.{target}"] = f"{path}.{alias}"


def _apply_use_trt(svc: dict, path: str, notes: _Notes) -> None:
    if "use_trt" not in svc:
        return
    use_trt = svc.pop("use_trt")
    device_type = _device_type_value(svc.get("device_type", 0))
    if use_trt is True and _is_int(device_type) and device_type >= 1:
        svc["device_type"] = 2
    else:
        notes.ignored.append(f"{path}.local_service_conf.use_trt")


def _normalize_op(name: str, op: Any, notes: _Notes) -> Any:
    path = f"op.{name}"
    if op is None:
        op = {}
    if not isinstance(op, dict):
        return op
    op = dict(op)
    if "name" in op:
        notes.problems.append((f"{path}.name", "unknown key (an op's name is its key under 'op:')"))
        op.pop("name")
    if "cls" in op:
        notes.problems.append((f"{path}.cls", "unknown key (did you mean 'class'?)"))
        op.pop("cls")
    op["name"] = name
    _drop_ignored(op, IGNORED_OP_KEYS, path + ".", notes)
    svc = op.get("local_service_conf")
    if svc is None:
        svc = {}
    if isinstance(svc, dict):
        svc = dict(svc)
        _drop_ignored(svc, IGNORED_LOCAL_SERVICE_KEYS, path + ".local_service_conf.", notes)
        _apply_use_trt(svc, path, notes)
    _fold_aliases(op, svc, path, notes)
    op["local_service_conf"] = svc
    return op


def _normalize(data: dict, default_name: str, notes: _Notes) -> dict:
    """Copy of ``data`` with Paddle Serving keys dropped or folded, op names filled in."""
    data = dict(data)
    _drop_ignored(data, IGNORED_TOP_KEYS, "", notes)
    data.setdefault("name", default_name)
    if isinstance(data.get("dag"), dict):
        data["dag"] = dict(data["dag"])
        _drop_ignored(data["dag"], IGNORED_DAG_KEYS, "dag.", notes)
    if isinstance(data.get("op"), dict):
        data["op"] = {name: _normalize_op(str(name), op, notes) for name, op in data["op"].items()}
    return data


# ---------------------------------------------------------------------------
# op classes, params, DAG
# ---------------------------------------------------------------------------
def _bind_ops(config: ServingConfig) -> list[tuple[str, str]]:
    from serving.registry import resolve_op_class

    problems: list[tuple[str, str]] = []
    for op in config.ops:
        path = f"op.{op.name}"
        try:
            op_class = resolve_op_class(op.cls)
        except ValueError as exc:
            problems.append((f"{path}.class", str(exc)))
            continue
        op._op_class = op_class
        try:
            op._params_model = op_class.Params.model_validate(op.params)
        except ValidationError as exc:
            problems.extend(validation_problems(exc, op_class.Params, f"{path}.params"))
        if getattr(op_class, "needs_model", True) and op.local_service_conf.model_config is None:
            problems.append((f"{path}.local_service_conf.model_config", f"required by op class {op.cls!r}"))
    if problems:
        return problems
    try:
        config._dag_graph = Dag({op.name: op.input_ops for op in config.ops})
    except DagError as exc:
        key = f"op.{exc.op}.input_ops" if exc.op else "op"
        problems.append((key, str(exc)))
    return problems


def _default_name(stem: str) -> str:
    return stem if re.fullmatch(NAME_PATTERN, stem or "") else "pipeline"


def _parse(data: Any, source: str, base_dir: str, default_name: str, source_path: str) -> ServingConfig:
    if data is None:
        raise ConfigError(source, ROOT_KEY, "the file is empty; expected a mapping with an 'op:' section")
    if not isinstance(data, dict):
        raise ConfigError(source, ROOT_KEY, f"must be a mapping, got {type(data).__name__}")
    notes = _Notes()
    data = _normalize(data, default_name, notes)
    problems = notes.problems
    config = None
    try:
        config = ServingConfig.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        problems.extend((notes.renamed.get(key, key), message)
                        for key, message in validation_problems(exc, ServingConfig))
    if problems:
        raise ConfigError.many(source, problems)
    assert config is not None
    config._source_path = source_path
    problems = _bind_ops(config)
    if problems:
        raise ConfigError.many(source, problems)
    if notes.ignored:
        logger.info("%s: ignored Paddle Serving key(s) that have no meaning in batchline: %s",
                    source, ", ".join(notes.ignored))
    return config


def parse_config(data: dict, source: str = "<config>") -> ServingConfig:
    """Validate an already-loaded config mapping.

    ``source`` names the file in error messages; when it is a path (not
    ``<...>``), relative model paths resolve against its directory and the
    default ``name`` is its stem.
    """
    if source.startswith("<"):
        return _parse(data, source, os.getcwd(), "pipeline", source)
    path = os.path.abspath(source)
    return _parse(data, source, os.path.dirname(path), _default_name(Path(path).stem), path)


def load_config(path: str | os.PathLike) -> ServingConfig:
    """Read, validate and resolve a config file (plain path or ``pkg://package/file.yml``)."""
    source = os.fspath(path)
    try:
        resolved = resolve_pkg_path(source)
    except ValueError as exc:
        raise ConfigError(source, FILE_KEY, str(exc)) from None
    try:
        text = Path(resolved).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, FILE_KEY, f"no such file: {resolved}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, FILE_KEY, f"cannot read: {exc}") from None
    data = _load_yaml(text, source)
    return _parse(data, source, os.path.dirname(resolved), _default_name(Path(resolved).stem), resolved)
