"""``local_service_conf`` -> predictor instances: in this process sharing the
weights (:mod:`serving.runners.runner_modules`), one child process each
(``instance_mode: process``) on the CPU sets of the plan, or one thread each in
the process of their device (``instance_mode: device_process``); children load
in parallel.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from serving.config.schema import LocalServiceConf
from serving.op import Runner
from serving.runners.cpu_plan import CpuSet
from serving.runners.device_hosts import DeviceHosts, Share
from serving.runners.placement import gpu_of
from serving.runners.process import ModelFactory, ProcessPredictor
from serving.runners.runner_modules import load_in_process


def create_runners(
    conf: LocalServiceConf,
    count: int,
    cpu_sets: Sequence[CpuSet] | None = None,
    idle_cpu: bool = False,
    label: str = "",
    factory: ModelFactory | None = None,
    hosts: DeviceHosts | None = None,
) -> list[Runner]:
    """The ``count`` predictor instances ``conf`` describes, or that ``factory``
    (the op's own model) builds, on the GPUs :func:`~serving.runners.placement.gpu_of`
    names. ``label`` (the op's name) names process instances for ``ps``;
    ``idle_cpu`` applies to them only: thread instances run in the server's own
    process, so their CPU class is the business of the threads that call them.
    ``hosts``: the server's device processes (default: ones for these instances alone)."""
    if conf.instance_mode == "thread":
        if factory is not None:
            return [factory(gpu_of(conf, i)) for i in range(count)]
        return list(load_in_process(conf, count))
    sets: Sequence[CpuSet] = cpu_sets if cpu_sets is not None else [None] * count
    if len(sets) != count:
        raise ValueError(f"{count} predictor processes need {count} CPU sets, got {len(sets)}")
    host: DeviceHosts | None = None
    shares: list[Share | None] = [None] * count
    if conf.instance_mode == "device_process":
        host = hosts if hosts is not None else DeviceHosts()
        shares = weight_shares([gpu_of(conf, i) for i in range(count)])
    runners = [
        ProcessPredictor(
            conf,
            gpu_of(conf, i),
            wait_ready=False,
            cpus=sets[i],
            idle_cpu=idle_cpu,
            label=label,
            factory=factory,
            host=host,
            share=shares[i],
        )
        for i in range(count)
    ]
    try:
        for runner in runners:  # the children load their models in parallel
            runner.wait_ready()
    except Exception:
        for runner in runners:
            runner.close()
        raise
    return list(runners)


def weight_shares(devices: Sequence[int | None]) -> list[Share | None]:
    """For instances on ``devices`` (one entry each): those on one device share their weights
    in its device process, as thread instances do."""
    token = secrets.token_hex(8)
    on: dict[int | None, list[int]] = {}
    for i, device in enumerate(devices):
        on.setdefault(device, []).append(i)
    shares: list[Share | None] = [None] * len(devices)
    for device, indices in on.items():
        for position, i in enumerate(indices):
            shares[i] = Share(f"{token}-{device}", len(indices), position)
    return shares
