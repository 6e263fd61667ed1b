"""Build and start one op stage: its op object, its predictor instances (on
the CPUs the plan gives them), warm-up, then its worker threads."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from serving.batching.metrics import Metrics
from serving.batching.stage import OpStage
from serving.batching.warmup import warm
from serving.config.engines import ENGINES
from serving.config.schema import DagConfig, OpConfig
from serving.op import Op, OpContext, Runner
from serving.runners.cpu_plan import CpuAllocator, CpuSet
from serving.runners.device_hosts import DeviceHosts
from serving.runners.factory import create_runners

log = logging.getLogger(__name__)


def make_op(op_conf: OpConfig, name: str | None = None) -> Op:
    """The op object of a validated config entry; ``name`` overrides its name (a shared op's share name)."""
    if op_conf.op_class is None or op_conf.params_model is None:
        raise ValueError(f"op {op_conf.name!r} was not bound to its class: load the config with load_config()")
    return op_conf.op_class(OpContext(name=name or op_conf.name, conf=op_conf, params=op_conf.params_model))


def runners_for(
    op: Op,
    count: int,
    cpu_sets: list[CpuSet] | None = None,
    idle_cpu: bool = False,
    hosts: DeviceHosts | None = None,
) -> list[Runner]:
    """The op's own runners if it makes them, else the predictors its config (and model factory) describe."""
    own = op.create_runners(count)
    if own is not None:
        return own
    return create_runners(
        op.conf.local_service_conf,
        count,
        cpu_sets,
        idle_cpu=idle_cpu,
        label=op.name,
        factory=op.model_factory(),
        hosts=hosts,
    )


def build_stage(
    op_conf: OpConfig,
    dag_conf: DagConfig,
    *,
    metrics: Metrics,
    clock: Callable[[], float],
    labels: tuple[str, str],
    name: str | None = None,
    shared: bool = False,
    idle_cpu: bool = False,
) -> OpStage:
    """An op stage, not started."""
    return OpStage(
        make_op(op_conf, name),
        metrics=metrics,
        channel_size=dag_conf.channel_size,
        priority_levels=dag_conf.priority_levels,
        priority_max_wait_s=dag_conf.priority_max_wait_ms / 1000.0,
        clock=clock,
        labels=labels,
        shared=shared,
        idle_cpu=idle_cpu,
    )


def launch(stage: OpStage, cpus: CpuAllocator, *, warmup: bool, hosts: DeviceHosts | None = None) -> list[CpuSet]:
    """Load the op, create and warm its instances (``device_process`` ones in ``hosts``,
    the server's device processes), start the stage; returns the CPU sets taken."""
    began = time.monotonic()
    stage.op.load()
    svc = stage.conf.local_service_conf
    if svc.instance_num > 1 and not svc.instances_overlap and svc.device_type == 0 and stage.op.needs_model:
        overlapping = [f"engine: {e.name}" for e in ENGINES.values() if e.threads_overlap and 0 in e.precisions]
        log.warning(
            "op %s: %d thread instances on CPU take turns (%s holds the GIL while it runs) and "
            "each keeps its own workspace memory; consider %s",
            stage.name,
            svc.instance_num,
            ENGINES[svc.engine].runtime,
            " or ".join([*overlapping, "instance_mode: process"]),
        )
    cpu_sets = cpus.allocate(svc)
    try:
        runners = runners_for(stage.op, svc.instance_num, cpu_sets, idle_cpu=stage.idle_cpu, hosts=hosts)
        try:
            if warmup:
                warm(stage, runners)
        except BaseException:
            for runner in runners:
                runner.close()
            raise
    except BaseException:
        cpus.release(cpu_sets)
        raise
    stage.start(runners)
    log.info("op %s ready: %d instance(s), %.1fs", stage.name, len(runners), time.monotonic() - began)
    return cpu_sets
