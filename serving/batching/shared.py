"""Op stages shared by several pipelines (``share:`` in the config): one batcher
and one set of instances. Keyed by share name and fingerprint, so a reload that
changes a shared op builds a new stage while the old one drains with the old pipelines.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from serving.batching.launch import build_stage, launch
from serving.batching.metrics import SHARED, Metrics
from serving.batching.stage import OpStage
from serving.config.schema import DagConfig, OpConfig
from serving.runners.cpu_plan import CpuAllocator, CpuSet
from serving.runners.device_hosts import DeviceHosts

log = logging.getLogger(__name__)

User = tuple[str, int, int]  # (pipeline name, version, build number): one running pipeline


@dataclass
class _Entry:
    stage: OpStage
    users: set[User] = field(default_factory=set)
    cpu_sets: list[CpuSet] | None = None  # None until started


class SharedStages:
    def __init__(
        self,
        *,
        metrics: Metrics,
        cpus: CpuAllocator,
        hosts: DeviceHosts | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.metrics = metrics
        self.cpus = cpus
        self.hosts = hosts if hosts is not None else DeviceHosts()
        self.clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def acquire(self, share: str, fingerprint: str, op_conf: OpConfig, dag_conf: DagConfig, user: User) -> OpStage:
        """The stage of ``share`` with this fingerprint, built on first use
        (:meth:`start_pending` starts it)."""
        key = (share, fingerprint)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                stage = build_stage(
                    op_conf,
                    dag_conf,
                    metrics=self.metrics,
                    clock=self.clock,
                    labels=(SHARED, ""),
                    name=share,
                    shared=True,
                )
                entry = self._entries[key] = _Entry(stage)
            entry.users.add(user)
            return entry.stage

    def start_pending(self, *, warmup: bool) -> None:
        """Load, warm and start every stage built but not started yet."""
        with self._lock:
            pending = [e for e in self._entries.values() if e.cpu_sets is None]
        for entry in pending:
            entry.cpu_sets = launch(entry.stage, self.cpus, warmup=warmup, hosts=self.hosts)

    def release(self, share: str, fingerprint: str, user: User) -> None:
        """``user`` no longer feeds the stage; the last user out stops it."""
        key = (share, fingerprint)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            entry.users.discard(user)
            if entry.users:
                return
            del self._entries[key]
        entry.stage.stop(timeout=5.0)
        if entry.cpu_sets is not None:
            self.cpus.release(entry.cpu_sets)
        log.info("shared op %s stopped (no pipeline uses it)", share)

    def users(self) -> dict[str, list[str]]:
        """Share name -> ``name/vN`` of the pipelines feeding it."""
        with self._lock:
            out: dict[str, list[str]] = {}
            for (share, _), entry in self._entries.items():
                out.setdefault(share, []).extend(sorted({f"{n}/v{v}" for n, v, _ in entry.users}))
            return out
