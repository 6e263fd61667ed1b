"""CPU sets for processes of one machine that do not share an allocator: the
replicas of a Ray cluster's node, each running one op in its own process.

Each replica would otherwise pin its OpenVINO instances to the same first
cores (:mod:`serving.runners.cpu_plan` explains why that halves their speed).
The claims of every living process are kept in one small JSON file per user
(``$TMPDIR/batchline-cpu-claims-<uid>.json``) under an exclusive lock; a
process allocates from the CPUs least claimed machine-wide and records its
claim; claims of processes that died are ignored and dropped.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from serving.config.schema import LocalServiceConf
from serving.runners.cpu_plan import CpuAllocator, CpuSet
from serving.runners.pids import pid_alive


def default_claims_path() -> str:
    return os.path.join(tempfile.gettempdir(), f"batchline-cpu-claims-{os.getuid()}.json")


class NodeCpuAllocator(CpuAllocator):
    """A :class:`CpuAllocator` whose choices account for the other processes of the machine."""

    def __init__(self, path: str | None = None, available: Sequence[int] | None = None, pid: int | None = None):
        super().__init__(available)
        self.path = path or default_claims_path()
        self.pid = os.getpid() if pid is None else pid

    @contextmanager
    def _claims(self) -> Iterator[dict[str, list[int]]]:
        """The living processes' claims, locked; changes are written back."""
        with open(self.path, "a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            try:
                raw = json.loads(f.read() or "{}")
            except ValueError:
                raw = {}  # a torn file from a crash: start over
            claims = {pid: list(cpus) for pid, cpus in raw.items() if pid.isdigit() and pid_alive(int(pid))}
            yield claims
            f.seek(0)
            f.truncate()
            f.write(json.dumps(claims))

    def allocate(self, conf: LocalServiceConf, elsewhere: Mapping[int, int] | None = None) -> list[CpuSet]:
        with self._claims() as claims:
            others = Counter(cpu for pid, cpus in claims.items() if pid != str(self.pid) for cpu in cpus)
            others.update(elsewhere or {})
            sets = super().allocate(conf, others)
            claims[str(self.pid)] = self._held()
        return sets

    def release(self, sets: Sequence[CpuSet]) -> None:
        with self._claims() as claims:
            super().release(sets)
            held = self._held()
            if held:
                claims[str(self.pid)] = held
            else:
                claims.pop(str(self.pid), None)

    def _held(self) -> list[int]:
        return [cpu for cpu, n in self.usage().items() for _ in range(n)]
