"""The engine table: every engine by name, one module each; everything that depends on the
engine asks it (to add one: docs/howto/add-an-engine.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from serving.config.engines import onnxruntime, openvino, paddle, torch
from serving.config.engines.base import Engine, EngineSettings
from serving.config.errors import FieldProblem

# The first is the default engine.
ENGINES: Mapping[str, Engine] = MappingProxyType(
    {e.name: e for e in (paddle.ENGINE, openvino.ENGINE, torch.ENGINE, onnxruntime.ENGINE)}
)
ENGINE_NAMES = tuple(ENGINES)

if TYPE_CHECKING:
    EngineName = str
else:
    # The schema's choices are the table's names (a Literal built at run time: mypy sees str)
    EngineName = Literal[ENGINE_NAMES]


def foreign_keys(name: str) -> dict[str, Engine]:
    """Keys other engines own and ``name`` does not -> an owner: ``engine: name`` must leave them
    at the owner's default."""
    mine = ENGINES[name].own_keys
    return {key: other for other in ENGINES.values() if other.name != name for key in other.own_keys if key not in mine}


def check_keys(name: str, conf: EngineSettings) -> None:
    """Refuse another engine's own keys (set away from their default), then ask the engine itself."""
    for key, owner in foreign_keys(name).items():
        if getattr(conf, key) != owner.own_keys[key]:
            owners = [e for e in ENGINES.values() if key in e.own_keys]
            what = owner.setting_phrase if len(owners) == 1 else f"a {' and '.join(e.runtime for e in owners)} setting"
            names = " or ".join(e.name for e in owners)
            raise FieldProblem(key, f"is {what}: it needs engine: {names} (or drop it)")
    ENGINES[name].check(conf)


def engine_description() -> str:
    """The ``engine`` key's description in the config reference, one clause per engine."""
    clauses = [e.summary for e in ENGINES.values()]
    listed = ", ".join(clauses[:-1]) + ", or " + clauses[-1] if len(clauses) > 1 else clauses[0]
    return f"The runtime that runs the model: {listed}."


__all__ = [
    "ENGINES",
    "ENGINE_NAMES",
    "Engine",
    "EngineName",
    "EngineSettings",
    "check_keys",
    "engine_description",
    "foreign_keys",
]
