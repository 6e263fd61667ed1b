"""CPU planning: which cores each predictor process may run on.

OpenVINO binds its inference threads to cores, and every process picks the
same first cores of its affinity mask: two OpenVINO processes on a 2-core
machine shared one core, each at half speed (``bench/openvino_pinning.py``).
So OpenVINO predictor processes get disjoint sets of ``thread_num`` CPUs,
handed out consecutively op after op, wrapping round the CPUs this server may
use. Other engines, and thread instances, stay unpinned (``None``): the OS
balances them better than a fixed plan.

The plan is made once for everything the server runs, so no two ops are
pinned to the same cores unless the CPUs run out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from serving.config.schema import LocalServiceConf

CpuSet = list[int] | None


def pins_cpus(conf: LocalServiceConf) -> bool:
    """Whether predictor processes of ``conf`` get pinned CPU sets (OpenVINO processes on CPU)."""
    return conf.use_openvino and conf.device_type == 0 and conf.instance_mode == "process"


def available_cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


def plan_cpus(confs: Sequence[LocalServiceConf], available: Sequence[int] | None = None) -> list[list[CpuSet]]:
    """For each conf (in order), one CPU set per predictor instance (``None``: unpinned)."""
    cpus = list(available) if available is not None else available_cpus()
    plan: list[list[CpuSet]] = []
    offset = 0
    for conf in confs:
        if not pins_cpus(conf):
            plan.append([None] * conf.instance_num)
            continue
        per = max(1, min(conf.thread_num, len(cpus)))
        plan.append([[cpus[(offset + i * per + k) % len(cpus)] for k in range(per)] for i in range(conf.instance_num)])
        offset += conf.instance_num * per
    return plan
