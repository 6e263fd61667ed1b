"""Shared-memory segments that carry feeds and outputs between the server and a
predictor process: a segment the creator grows on demand, and arrays written
into it / viewed out of it with a small JSON-able header."""

from __future__ import annotations

from multiprocessing import shared_memory
from typing import Any

import numpy as np


class Segment:
    """A shared-memory segment this process may grow (creator) or just attach.

    The creator unlinks it. Python's resource tracker (shared by the server
    and its children) still knows every segment, so if the server is killed
    outright the tracker unlinks what is left once the last process exits."""

    def __init__(self) -> None:
        self.shm: shared_memory.SharedMemory | None = None

    @property
    def name(self) -> str:
        assert self.shm is not None
        return self.shm.name

    def ensure(self, size: int) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.size < size:
            self.release()
            self.shm = shared_memory.SharedMemory(create=True, size=max(size, 1 << 20))
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
