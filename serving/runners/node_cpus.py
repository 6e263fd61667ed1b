"""CPU sets for processes of one machine that do not share an allocator: the
replicas of a Ray cluster's node, each running one op in its own process
(otherwise each pins its OpenVINO instances to the same first cores).

The claims of every living process are kept in one small JSON file per user,
``cpu-claims.json``, under an exclusive lock, in a directory no other user can
write to: ``$XDG_RUNTIME_DIR/batchline``, else ``$TMPDIR/batchline-<uid>``
(where anyone may create that name first: such a directory is refused, never
used or changed). The file is a hint, never trusted: whatever it holds that is
not a small map of pids to CPU lists counts as no claims, and where it cannot be
used safely the process allocates as if it were alone (slower, never wrong).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from serving.config.schema import LocalServiceConf
from serving.runners.cpu_plan import CpuAllocator, CpuSet
from serving.runners.pids import pid_alive

log = logging.getLogger(__name__)


class UnsafeDir(OSError):
    """The directory is not this user's alone (another owner, a link, group or other access)."""


def default_private_dir() -> str:
    """Where this user's private batchline directory is (it may not exist yet)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return os.path.join(runtime, "batchline")
    return os.path.join(tempfile.gettempdir(), f"batchline-{os.geteuid()}")


def open_private_dir(path: str) -> int:
    """A file descriptor of directory ``path``, created with mode 0700 if missing.

    Files are then opened relative to it (``dir_fd``), so what was checked is what
    is used. Raises :class:`UnsafeDir` for a directory that is not this user's
    alone, OSError where it cannot be made or opened (a link is not followed)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise UnsafeDir(f"{path} belongs to uid {st.st_uid}, not to this user ({os.geteuid()})")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeDir(
                f"{path} has mode {stat.S_IMODE(st.st_mode):04o}: other users may write to it (0700 needed)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


# far above what a machine's claims take (a few bytes per pinned instance): more is not ours
MAX_CLAIMS_BYTES = 1 << 20
_MAX_CPUS_PER_CLAIM = 1 << 16


def parse_claims(data: bytes) -> dict[str, list[int]]:
    """The claims in ``data``, a JSON object of pid -> CPU list; whatever else it
    holds (a file torn by a crash, or written by anyone) counts as no claims."""
    try:
        raw: Any = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        pid: cpus
        for pid, cpus in raw.items()
        if pid.isascii() and pid.isdigit() and len(pid) <= 10 and _is_cpu_list(cpus)
    }


def _is_cpu_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) <= _MAX_CPUS_PER_CLAIM
        and all(type(cpu) is int and 0 <= cpu < _MAX_CPUS_PER_CLAIM for cpu in value)
    )


class NodeCpuAllocator(CpuAllocator):
    """A :class:`CpuAllocator` whose choices account for the other processes of the machine."""

    def __init__(self, path: str | None = None, available: Sequence[int] | None = None, pid: int | None = None):
        super().__init__(available)
        self.path = path or os.path.join(default_private_dir(), "cpu-claims.json")
        self.pid = os.getpid() if pid is None else pid
        self._warned = False  # said once that the claims file cannot be used

    @contextmanager
    def _claims(self) -> Iterator[dict[str, list[int]]]:
        """The living processes' claims, locked; changes are written back.
        Where the file cannot be used safely: no claims, and nothing written."""
        try:
            fd = self._open()
        except OSError as exc:
            if not self._warned:
                log.warning("CPU claims not shared with this machine's other processes: %s", exc)
                self._warned = True
            yield {}
            return
        with os.fdopen(fd, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            data = f.read(MAX_CLAIMS_BYTES + 1)
            raw = parse_claims(data) if len(data) <= MAX_CLAIMS_BYTES else {}
            claims = {pid: cpus for pid, cpus in raw.items() if pid_alive(int(pid))}
            yield claims
            f.seek(0)
            f.truncate()
            f.write(json.dumps(claims).encode())

    def _open(self) -> int:
        """The claims file, opened for reading and writing (created if missing):
        a plain file of this user's in a directory of this user's alone, no link followed."""
        directory, name = os.path.split(os.path.abspath(self.path))
        dir_fd = open_private_dir(directory)
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            os.close(fd)
            raise OSError(f"{self.path} is not a plain file of this user's")
        return fd

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
