"""Shared-memory segments that carry feeds and outputs between the server and a
predictor process, grown on demand, with arrays written into them and viewed out
of them by a small JSON-able header.

Names are ``bl<pid>_<token>_<use><random>``, so a server can remove those of a
child that died (:func:`unlink_prefixed`) and, at start-up, those of servers
that are gone (:func:`sweep_stale`). Anyone may create files in /dev/shm: the
sweeps remove only this user's plain files with names they parse, never raise,
and the random part keeps others from taking the next name first.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

from serving.runners.pids import pid_alive

log = logging.getLogger(__name__)

#: where POSIX shared memory lives on Linux (elsewhere the sweeps find nothing)
SHM_DIR = "/dev/shm"
# the whole name as segment_prefix and Segment make it (a pid_t has at most 10 digits); no
# other name is ours, and none with other characters is given to the resource tracker
_OURS = re.compile(r"bl([1-9][0-9]{0,9})_[0-9a-f]{8}_[0-9a-z_]{1,64}")


def segment_prefix(pid: int | None = None) -> str:
    """A fresh name prefix for one predictor process's segments, owned by ``pid`` (this process)."""
    return f"bl{os.getpid() if pid is None else pid}_{secrets.token_hex(4)}_"


def _names(shm_dir: str) -> list[str]:
    """The names in ``shm_dir`` that could be segments of ours (:data:`_OURS`)."""
    try:
        return [n for n in os.listdir(shm_dir) if _OURS.fullmatch(n)]
    except OSError as exc:
        log.debug("cannot list %s: %s", shm_dir, exc)
        return []


def _is_ours(path: str) -> bool:
    """Whether ``path`` is a plain file of this user's (no link followed; /dev/shm is sticky)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def _unlink(shm_dir: str, name: str) -> bool:
    """Unlink segment ``name`` if it is still there and ours; never raises. Registered with
    the resource tracker first and unregistered after, its books balance whoever made it."""
    path = os.path.join(shm_dir, name)
    if not _is_ours(path):
        log.debug("left %s alone: not a shared-memory segment of this user", path)
        return False
    tracked = "/" + name  # as SharedMemory names it to the tracker
    try:
        resource_tracker.register(tracked, "shared_memory")
        try:
            os.unlink(path)
        finally:
            resource_tracker.unregister(tracked, "shared_memory")
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as exc:
        log.warning("could not remove shared-memory segment %s: %s", path, exc)
        return False
    return True


def unlink_prefixed(prefix: str, shm_dir: str = SHM_DIR) -> int:
    """Unlink every segment of ours whose name starts with ``prefix``; returns how many."""
    return sum(_unlink(shm_dir, n) for n in _names(shm_dir) if n.startswith(prefix))


def sweep_stale(shm_dir: str = SHM_DIR) -> list[str]:
    """Unlink the segments of batchline servers that no longer run (named by
    :func:`segment_prefix`, owner pid gone); returns their names."""
    stale = [n for n in _names(shm_dir) if (m := _OURS.fullmatch(n)) and not pid_alive(int(m.group(1)))]
    removed = [n for n in stale if _unlink(shm_dir, n)]
    if removed:
        log.warning("removed %d shared-memory segments left by servers that are gone: %s", len(removed), removed)
    return removed


class Segment:
    """A shared-memory segment this process may grow (creator) or just attach; the
    creator unlinks it (the server, those of a predictor process that died)."""

    def __init__(self, prefix: str | None = None) -> None:
        self.shm: shared_memory.SharedMemory | None = None
        self._prefix = prefix  # names of segments this process creates: prefix + random hex

    @property
    def name(self) -> str:
        assert self.shm is not None
        return self.shm.name

    def ensure(self, size: int) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.size < size:
            self.release()
            name = None if self._prefix is None else self._prefix + secrets.token_hex(8)
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
