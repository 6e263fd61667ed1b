"""The engine seam: the engine table (:data:`serving.config.engines.ENGINES`)
names each engine's runner module, which gives ``load_in_process(conf, count)``
(instances in this process, sharing weights where it can) and ``load_one(conf,
device_id)`` (one with its own weights: a predictor process's). Modules are
imported on first use, so a config check loads no runtime.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol, cast

from serving.config.engines import ENGINES
from serving.config.schema import LocalServiceConf
from serving.op import Runner


class ModelRunner(Runner, Protocol):
    """A :class:`serving.op.Runner` built from a config: it also names its outputs and device."""

    output_names: list[str]
    device: str


class EngineLoader(Protocol):
    """What an engine's runner module gives (its module-level functions)."""

    def load_in_process(self, conf: LocalServiceConf, count: int) -> Sequence[ModelRunner]: ...

    def load_one(self, conf: LocalServiceConf, device_id: int | None = None) -> ModelRunner: ...


def loader(engine: str) -> EngineLoader:
    """The runner module of ``engine`` (the table's ``loader``)."""
    return cast(EngineLoader, importlib.import_module(ENGINES[engine].loader))


def load_in_process(conf: LocalServiceConf, count: int) -> list[ModelRunner]:
    """``count`` instances of ``conf``'s model in this process, sharing weights."""
    return list(loader(conf.engine).load_in_process(conf, count))


def load_one(conf: LocalServiceConf, device_id: int | None = None) -> ModelRunner:
    """One instance with its own weights (a predictor process's), on GPU ``device_id``."""
    return loader(conf.engine).load_one(conf, device_id)
