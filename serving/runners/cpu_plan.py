"""CPU planning: which cores each predictor process may run on.

OpenVINO binds its inference threads to cores, and every process picks the
same first cores of its affinity mask: two OpenVINO processes on a 2-core
machine shared one core, each at half speed (docs/DESIGN_NOTES.md, "OpenVINO pinning").
So predictor processes of engines that pin cores (the engine table's
``pins_cores``) get sets of ``thread_num`` CPUs, the least used CPUs this
server may use first. Other engines, and thread instances, stay unpinned
(``None``): the OS balances them better than a fixed plan.

One :class:`CpuAllocator` is meant to serve everything the server runs, every
pipeline of a repository and every reload, so no two ops are pinned to the
same cores until the CPUs run out; a closed pipeline releases its sets.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from serving.config.engines import ENGINES
from serving.config.schema import LocalServiceConf

CpuSet = list[int] | None


def use_idle_cpu(tid: int = 0) -> str:
    """Schedule a thread (``tid``; 0: the calling one) only on CPU time nothing
    else wants: Linux's ``SCHED_IDLE`` class, else the lowest niceness. Threads
    it creates later inherit the class. A nice value alone is not enough for
    shadow work: at nice +10 a busy process still takes about a tenth of a core
    from the server (docs/BENCHMARKS.md, shadow overhead). Returns what was applied."""
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return "SCHED_IDLE"
    except (AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, tid, 19)
        return "nice 19"


def pins_cpus(conf: LocalServiceConf) -> bool:
    """Whether predictor processes of ``conf`` get pinned CPU sets: the engine says whether
    it binds threads to cores (OpenVINO on CPU, either engine). In-process OpenVINO Runtime
    instances are left to the OS scheduler (``ENABLE_CPU_PINNING`` off, serving.runners.openvino_runtime)."""
    return conf.instance_mode == "process" and ENGINES[conf.engine].pins_cores(conf)


def available_cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


class CpuAllocator:
    """Hands out CPU sets for predictor instances, least used CPUs first.

    Ties go to the CPU that comes first in ``available`` (default: this
    process's affinity, sorted), so plans are deterministic: from a fresh
    allocator, consecutive sets wrap round the CPUs in order. Thread-safe."""

    def __init__(self, available: Sequence[int] | None = None):
        cpus = list(dict.fromkeys(available)) if available is not None else available_cpus()
        if not cpus:
            raise ValueError("no CPUs to allocate from")
        self._cpus = cpus
        self._order = {cpu: i for i, cpu in enumerate(cpus)}
        self._usage = dict.fromkeys(cpus, 0)  # CPU -> instances pinned to it
        self._lock = threading.Lock()

    def allocate(self, conf: LocalServiceConf, elsewhere: Mapping[int, int] | None = None) -> list[CpuSet]:
        """One CPU set per instance of ``conf`` (``None``: unpinned, takes no CPUs).
        ``elsewhere`` counts instances other processes pinned to each CPU."""
        if not pins_cpus(conf):
            return [None] * conf.instance_num
        per = max(1, min(conf.thread_num, len(self._cpus)))
        other = elsewhere or {}
        sets: list[CpuSet] = []
        with self._lock:
            for _ in range(conf.instance_num):
                chosen = sorted(self._cpus, key=lambda cpu: (self._usage[cpu] + other.get(cpu, 0), self._order[cpu]))[
                    :per
                ]
                for cpu in chosen:
                    self._usage[cpu] += 1
                sets.append(chosen)
        return sets

    def release(self, sets: Sequence[CpuSet]) -> None:
        """Give back sets from :meth:`allocate` (``None`` entries are skipped).

        Checked as a whole before anything changes: a CPU this allocator does
        not have, or more releases than allocations, raise ValueError."""
        counts: dict[int, int] = {}
        for cpu_set in sets:
            for cpu in cpu_set or ():
                counts[cpu] = counts.get(cpu, 0) + 1
        with self._lock:
            for cpu, n in counts.items():
                if cpu not in self._usage:
                    raise ValueError(f"CPU {cpu} is not one this allocator hands out ({self._cpus})")
                if n > self._usage[cpu]:
                    raise ValueError(f"CPU {cpu} released {n} times but allocated {self._usage[cpu]} times")
            for cpu, n in counts.items():
                self._usage[cpu] -= n

    def usage(self) -> dict[int, int]:
        """CPU -> number of instances currently pinned to it (every CPU, in order)."""
        with self._lock:
            return dict(self._usage)
