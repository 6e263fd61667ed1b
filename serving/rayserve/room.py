"""The CPUs an application's deployments ask Ray for, fitted to one machine before a local
cluster starts. Ray's ``num_cpus`` reserves, it does not limit: defaults that do not fit are
scaled down together; what a config sets is kept (:class:`NoRoom` when that cannot fit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving.config.file_set import RepositoryConfig
from serving.rayserve.deployments import INGRESS, deployment_options, op_deployments, ray_block

# Ray counts resources in units of 1/10000
_UNIT = 10_000


class NoRoom(ValueError):
    """The deployments' CPUs cannot fit: the message names need, supply and the keys to change."""


@dataclass(frozen=True)
class CpuAsk:
    """One deployment's CPUs: ``replicas x cpus``; ``explicit`` when the config sets ``num_cpus``."""

    deployment: str
    replicas: int
    cpus: float
    explicit: bool
    source: str  # the file that holds the ray block
    key: str  # the block's key path (``op.rec.ray``, ``ray.ingress``)

    @property
    def total(self) -> float:
        return self.replicas * self.cpus

    def describe(self) -> str:
        how = "set" if self.explicit else "default"
        return (
            f"{self.deployment}: {self.replicas} replica(s) x {self.cpus:g} CPUs ({how}; {self.source}: "
            f"{self.key}.ray_actor_options.num_cpus, {self.key}.num_replicas)"
        )


def initial_replicas(options: Mapping[str, Any]) -> int:
    """The replicas a deployment starts with: ``num_replicas``, or the autoscaler's initial (or minimum)."""
    scaling = options.get("autoscaling_config")
    if scaling is None:
        return int(options.get("num_replicas", 1))
    initial = scaling.get("initial_replicas")
    return int(scaling.get("min_replicas", 1) if initial is None else initial)


def cpu_asks(repo: RepositoryConfig) -> list[CpuAsk]:
    """Every deployment that asks for CPUs (the metrics hub asks none), in deployment order."""
    options = deployment_options(repo)
    files = {id(config): file for file, config in zip(repo.files, repo.pipelines)}
    asks = []
    for name, (config, op) in op_deployments(repo).items():
        explicit = op.ray is not None and op.ray.ray_actor_options.num_cpus is not None
        asks.append(_ask(name, options[name], explicit, files[id(config)], f"op.{op.name}.ray"))
    file, conf = ray_block(repo)
    ingress = conf.ingress.ray_actor_options.num_cpus is not None
    asks.append(_ask(INGRESS, options[INGRESS], ingress, file, "ray.ingress"))
    return [ask for ask in asks if ask.cpus > 0]


def _ask(name: str, options: Mapping[str, Any], explicit: bool, source: str, key: str) -> CpuAsk:
    cpus = float(options["ray_actor_options"].get("num_cpus", 0.0))
    return CpuAsk(name, initial_replicas(options), cpus, explicit, source, key)


def fit_cpus(asks: list[CpuAsk], supply: float) -> dict[str, float]:
    """``num_cpus`` per replica for the default asks, scaled to fit ``supply`` (empty: they fit)."""
    need = sum(ask.total for ask in asks)
    if need <= supply:
        return {}
    fixed = sum(ask.total for ask in asks if ask.explicit)
    scalable = need - fixed
    if fixed >= supply or scalable <= 0:
        raise NoRoom(refusal(asks, supply))
    scale = (supply - fixed) / scalable
    # rounded down to Ray's unit, so the scaled asks never add up past the supply
    return {ask.deployment: math.floor(ask.cpus * scale * _UNIT) / _UNIT for ask in asks if not ask.explicit}


def refusal(asks: list[CpuAsk], supply: float) -> str:
    need = sum(ask.total for ask in asks)
    fixed = sum(ask.total for ask in asks if ask.explicit)
    return (
        f"the Ray deployments ask for {need:g} CPUs ({fixed:g} of them set in the configs) and this machine "
        f"gives Ray {supply:g}: Ray would never start the replicas that do not fit. Asked: "
        + "; ".join(ask.describe() for ask in asks)
        + ". Lower the num_cpus the configs set (fractions are fine: Ray reserves them for scheduling, an op "
        "runs instance_num x thread_num threads whatever it reserved), or the replicas, or deploy on a larger "
        "cluster with --address"
    )


def fitted_note(asks: list[CpuAsk], fitted: Mapping[str, float], supply: float) -> str:
    """What :func:`fit_cpus` changed, for the log."""
    need = sum(ask.total for ask in asks)
    changed = ", ".join(f"{name} {cpus:g}" for name, cpus in fitted.items())
    return (
        f"the Ray deployments ask for {need:g} CPUs by default and this machine gives Ray {supply:g}: "
        f"num_cpus per replica scaled down to fit ({changed}); the ops' threads share the cores as in the "
        f"single-process server. Set op.<name>.ray.ray_actor_options.num_cpus to choose"
    )
