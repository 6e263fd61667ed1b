"""Shared-memory segments: names that say whose they are, and the sweeps that
remove those of a dead predictor process or of a server that is gone."""

from __future__ import annotations

import os
import subprocess
from multiprocessing import shared_memory

import numpy as np
import pytest

from serving.runners.shared_memory import (
    SHM_DIR,
    Segment,
    array_views,
    segment_prefix,
    sweep_stale,
    unlink_prefixed,
    write_arrays,
)

pytestmark = pytest.mark.skipif(not os.path.isdir(SHM_DIR), reason="POSIX shared memory is listed in /dev/shm on Linux")


def names(prefix: str) -> list[str]:
    return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))


def make(name: str) -> None:
    shm = shared_memory.SharedMemory(name=name, create=True, size=16)
    shm.close()


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_segment_is_named_by_its_prefix_and_growing_unlinks_the_old_one():
    prefix = segment_prefix()
    assert prefix.startswith(f"bl{os.getpid()}_")
    segment = Segment(prefix + "f")
    try:
        write_arrays(segment, [("x", np.ones(4, np.float32))])
        assert names(prefix) == [prefix + "f0"]
        meta = write_arrays(segment, [("x", np.arange(600_000, dtype=np.float32))])  # > the first 1 MiB
        assert names(prefix) == [prefix + "f1"]
        (view,) = array_views(segment.shm, meta)
        assert view[-1] == 599_999
        del view
    finally:
        segment.release()
    assert names(prefix) == []


def test_unlink_prefixed_removes_that_prefix_only():
    mine, other = segment_prefix(), segment_prefix()
    for name in (mine + "o1_0", mine + "o1_1", other + "o1_0"):
        make(name)
    try:
        assert unlink_prefixed(mine) == 2
        assert names(mine) == [] and names(other) == [other + "o1_0"]
        assert unlink_prefixed(mine) == 0
    finally:
        unlink_prefixed(other)


def test_sweep_removes_the_segments_of_servers_that_are_gone_only():
    gone, alive = segment_prefix(dead_pid()), segment_prefix()
    foreign = f"psm_batchline_test_{os.getpid()}"
    for name in (gone + "f0", gone + "o1_0", alive + "f0", foreign):
        make(name)
    try:
        removed = sweep_stale()  # (and any other dead server's, on a machine that had some)
        assert {gone + "f0", gone + "o1_0"} <= set(removed)
        assert not {alive + "f0", foreign} & set(removed)
        assert names(gone) == [] and names(alive) == [alive + "f0"] and names(foreign) == [foreign]
    finally:
        unlink_prefixed(alive)
        unlink_prefixed(foreign)
