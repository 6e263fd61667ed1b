"""Shared-memory segments that carry feeds and outputs between the server and a
predictor process: a segment the creator grows on demand, and arrays written
into it / viewed out of it with a small JSON-able header.

Segments are named ``bl<pid>_<token>_<use><n>``: the server's pid and a token
per predictor process. So a server can remove the segments of a predictor
process that died without cleaning up (:func:`unlink_prefixed`), and a server
starting up can remove those of servers that are gone (:func:`sweep_stale`):
after a SIGKILL of the whole process group nobody else would, Python's
resource tracker included."""

from __future__ import annotations

import logging
import os
import re
import secrets
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from serving.runners.pids import pid_alive

log = logging.getLogger(__name__)

#: where POSIX shared memory lives on Linux (elsewhere the sweeps find nothing)
SHM_DIR = "/dev/shm"
_OURS = re.compile(r"^bl(\d+)_[0-9a-f]+_")


def segment_prefix(pid: int | None = None) -> str:
    """A fresh name prefix for one predictor process's segments, owned by ``pid`` (this process)."""
    return f"bl{os.getpid() if pid is None else pid}_{secrets.token_hex(4)}_"


def _unlink(name: str) -> bool:
    """Unlink segment ``name`` if it still exists (attaching registers it with
    this process's resource tracker and unlinking unregisters it: balanced)."""
    try:
        shm = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return False
    shm.close()
    try:
        shm.unlink()
    except FileNotFoundError:
        return False
    return True


def unlink_prefixed(prefix: str, shm_dir: str = SHM_DIR) -> int:
    """Unlink every segment whose name starts with ``prefix``; returns how many."""
    try:
        names = [n for n in os.listdir(shm_dir) if n.startswith(prefix)]
    except OSError:
        return 0
    return sum(_unlink(n) for n in names)


def sweep_stale(shm_dir: str = SHM_DIR) -> list[str]:
    """Unlink the segments of batchline servers that no longer run (named by
    :func:`segment_prefix`, owner pid gone); returns their names."""
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return []
    stale = [n for n in names if (m := _OURS.match(n)) and not pid_alive(int(m.group(1)))]
    removed = [n for n in stale if _unlink(n)]
    if removed:
        log.warning("removed %d shared-memory segments left by servers that are gone: %s", len(removed), removed)
    return removed


class Segment:
    """A shared-memory segment this process may grow (creator) or just attach.

    The creator unlinks it; the server unlinks those of a predictor process
    that died (:func:`unlink_prefixed`). Python's resource tracker (shared by
    the server and its children) also knows every segment, and unlinks what
    is left once the last of them exits, unless it is killed with them."""

    def __init__(self, prefix: str | None = None) -> None:
        self.shm: shared_memory.SharedMemory | None = None
        self._prefix = prefix  # names of segments this process creates: prefix + a count
        self._made = 0

    @property
    def name(self) -> str:
        assert self.shm is not None
        return self.shm.name

    def ensure(self, size: int) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.size < size:
            self.release()
            name = None if self._prefix is None else f"{self._prefix}{self._made}"
            self._made += 1
            self.shm = shared_memory.SharedMemory(name=name, create=True, size=max(size, 1 << 20))
        return self.shm

    def attach(self, name: str) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.name != name:
            if self.shm is not None:
                self.shm.close()
            self.shm = shared_memory.SharedMemory(name=name)
        return self.shm

    def release(self, unlink: bool = True) -> None:
        if self.shm is not None:
            self.shm.close()
            if unlink:
                try:
                    self.shm.unlink()
                except FileNotFoundError:
                    pass
            self.shm = None


def write_arrays(segment: Segment, arrays: list[tuple[str, np.ndarray]]) -> list[dict[str, Any]]:
    arrays = [(n, np.ascontiguousarray(a)) for n, a in arrays]
    shm = segment.ensure(sum(a.nbytes for _, a in arrays))
    meta, offset = [], 0
    for name, array in arrays:
        view = np.ndarray(array.shape, array.dtype, buffer=shm.buf, offset=offset)
        view[...] = array
        del view
        meta.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
        offset += array.nbytes
    return meta


def array_views(shm: shared_memory.SharedMemory, meta: list[dict[str, Any]]) -> list[np.ndarray]:
    return [np.ndarray(tuple(m["shape"]), np.dtype(m["dtype"]), buffer=shm.buf, offset=m["offset"]) for m in meta]
