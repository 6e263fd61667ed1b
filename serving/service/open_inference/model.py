"""A pipeline as an Open Inference Protocol model: one BYTES input named after the input
kind; outputs ``result`` (each row's JSON) and the typed fields the final op declares
(:meth:`serving.op.Op.answer_fields`). Without a version, a model offers the fields every
version offers, as any of them may answer. A pipeline that reads its own requests (a Paddle
Serving script's) names no inputs or outputs: they are whatever its code reads and answers."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from serving.batching.live_pipelines import find_pipeline
from serving.config.file_set import RepositoryConfig
from serving.config.schema import ServingConfig
from serving.errors import NotFound
from serving.service.decode import KEYS_BY_KIND, plain_kind

PLATFORM = SERVER_NAME = "batchline"
#: the protocol's extensions this server implements
EXTENSIONS = ("binary_tensor_data",)
BYTES = "BYTES"
FP32 = "FP32"
RESULT = "result"
#: datatypes an op may declare for an answer field
FIELD_TYPES = (BYTES, FP32)
MAX_VERSION_DIGITS = 10


@dataclass(frozen=True)
class TensorSpec:
    name: str
    datatype: str
    shape: tuple[int, ...] = (-1,)  # -1: any number of rows

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(frozen=True)
class ModelView:
    """One model as a request names it: ``version`` None means the route picks one."""

    name: str
    version: int | None
    versions: tuple[int, ...]
    input: TensorSpec | None  # None: the pipeline reads its own requests (serving.paddle_serving.open_inference)
    outputs: tuple[TensorSpec, ...]

    def metadata(self) -> dict[str, object]:
        """The model metadata document (HTTP's JSON; gRPC's message has the same fields)."""
        return {
            "name": self.name,
            "versions": [str(v) for v in self.versions],
            "platform": PLATFORM,
            "inputs": [] if self.input is None else [self.input.as_dict()],
            "outputs": [o.as_dict() for o in self.outputs],
        }


def parse_version(text: str) -> int | None:
    """A request's model version: "" (the route's choice) -> None, "2" -> 2; anything else names no version."""
    if text == "":
        return None
    if text.isdigit() and text.isascii() and len(text) <= MAX_VERSION_DIGITS:
        return int(text)
    raise NotFound(f"no model version {text[:32]!r}: versions are positive integers")


def answer_fields(config: ServingConfig) -> dict[str, str]:
    """The typed fields a pipeline's answers hold: its single final op's declaration."""
    dag = config.dag_graph
    if len(dag.sinks) != 1:  # several final ops: each row is a mapping by op name
        return {}
    sink = dag.sinks[0]
    cls = config.op[sink].op_class
    if cls is None:
        return {}
    fields = dict(cls.answer_fields(source=sink in dag.sources))
    for name, datatype in fields.items():
        if name == RESULT or datatype not in FIELD_TYPES:
            raise TypeError(f"{cls.__name__}.answer_fields: {name!r}: {datatype!r} (datatypes: {FIELD_TYPES})")
    return fields


def output_specs(configs: Sequence[ServingConfig]) -> tuple[TensorSpec, ...]:
    """``result``, then the fields every one of ``configs`` declares alike, in the first's order."""
    shared = answer_fields(configs[0])
    for config in configs[1:]:
        theirs = answer_fields(config)
        shared = {k: v for k, v in shared.items() if theirs.get(k) == v}
    return (TensorSpec(RESULT, BYTES), *(TensorSpec(k, v) for k, v in shared.items()))


def model_view(config: RepositoryConfig, name: str, version: int | None) -> ModelView:
    """Model ``name`` (at ``version``; None: as routed) of the served repository; 404 when there is none."""
    route = config.routes.get(name)
    versions = {} if route is None else {(name, v): c for v, c in route.versions.items()}
    chosen = find_pipeline(config, versions, name, version)  # its 404 names what is served
    assert route is not None  # find_pipeline raised otherwise
    if (chosen.input_kind or "image") not in KEYS_BY_KIND:  # a script's: its code reads what it is sent
        return ModelView(name=name, version=version, versions=tuple(route.versions), input=None, outputs=())
    answering: Iterable[ServingConfig] = [chosen] if version is not None else route.versions.values()
    return ModelView(
        name=name,
        version=version,
        versions=tuple(route.versions),
        input=TensorSpec(plain_kind(chosen.input_kind, name), BYTES),
        outputs=output_specs(list(answering)),
    )


class ModelViews:
    """:func:`model_view` of each (name, version), worked out once per repository config: a
    request asks for its model's view, and a reload brings a new config (a new set of views)."""

    def __init__(self) -> None:
        self._config: RepositoryConfig | None = None
        self._views: dict[tuple[str, int | None], ModelView] = {}
        self._lock = threading.Lock()

    def get(self, config: RepositoryConfig, name: str, version: int | None) -> ModelView:
        with self._lock:
            if config is self._config:
                view = self._views.get((name, version))
                if view is not None:
                    return view
        view = model_view(config, name, version)  # 404 for a model not served: never kept
        with self._lock:
            if config is not self._config:
                self._config, self._views = config, {}
            self._views[(name, version)] = view
        return view


def server_metadata() -> dict[str, object]:
    """The server as the protocol describes it (``GET /v2``, ServerMetadata)."""
    try:
        server_version = version("batchline")
    except PackageNotFoundError:  # a source tree that was never installed
        server_version = "unknown"
    return {"name": SERVER_NAME, "version": server_version, "extensions": list(EXTENSIONS)}
