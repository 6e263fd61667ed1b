"""CPU planning: which cores each predictor process may run on. OpenVINO
processes all bind their threads to the first cores of their affinity mask (two
on a 2-core machine shared one core: docs/DESIGN_NOTES.md, "OpenVINO pinning"),
so processes of engines that pin cores get sets of ``thread_num`` CPUs, least
used first; everything else stays unpinned (``None``): the OS balances it
better. One :class:`CpuAllocator` serves the whole server, across reloads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from serving.config.engines import ENGINES
from serving.config.schema import LocalServiceConf

CpuSet = list[int] | None


def use_idle_cpu(tid: int = 0) -> str:
    """Schedule a thread (``tid``; 0: the calling one) only on CPU time nothing else
    wants: ``SCHED_IDLE``, else nice 19 (nice +10 alone still took a tenth of a core:
    docs/BENCHMARKS.md, shadow overhead). Later threads inherit it. Returns what was applied."""
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return "SCHED_IDLE"
    except (AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, tid, 19)
        return "nice 19"


def pins_cpus(conf: LocalServiceConf) -> bool:
    """Whether predictor processes of ``conf`` get pinned CPU sets (the engine binds threads to cores)."""
    return conf.instance_mode == "process" and ENGINES[conf.engine].pins_cores(conf)


def available_cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


class CpuAllocator:
    """Hands out CPU sets for predictor instances, least used CPUs first; ties go to the
    CPU first in ``available`` (default: this process's affinity), so plans are
    deterministic. Thread-safe."""

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
        """Give back sets from :meth:`allocate`. Checked as a whole before anything changes:
        a CPU this allocator does not have, or more releases than allocations, raise ValueError."""
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
