"""Shared-memory segments: names that say whose they are, and the sweeps that
remove those of a dead predictor process or of a server that is gone."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from multiprocessing import shared_memory
from pathlib import Path

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
    random_name = re.compile(re.escape(prefix) + "f[0-9a-f]{16}")  # not a count: nobody can take the next one first
    try:
        write_arrays(segment, [("x", np.ones(4, np.float32))])
        (first,) = names(prefix)
        assert random_name.fullmatch(first)
        meta = write_arrays(segment, [("x", np.arange(600_000, dtype=np.float32))])  # > the first 1 MiB
        (grown,) = names(prefix)
        assert random_name.fullmatch(grown) and grown != first
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


# ----------------------------------------------------------------------------- what others put in /dev/shm
# Any local user may create files there, named like ours: a sweep must neither fail on them
# (that would stop every predictor process from starting) nor remove them. A temporary
# directory stands in for /dev/shm, so that no other process's segment is touched.

OTHER_UID = 65534  # nobody


def stale_name(pid: int | None = None) -> str:
    """A name as a dead server's segment would have (a fresh token: no collision)."""
    return segment_prefix(dead_pid() if pid is None else pid) + "f" + secrets.token_hex(8)


def owned_by_another_user(path: Path) -> None:
    try:
        os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)
    except PermissionError:
        pytest.skip("giving a file to another user takes root")


def hostile_entry(shm: Path, kind: str) -> Path:
    """One entry that is not a segment of ours, though some are named like one."""
    if kind == "huge pid":
        path = shm / stale_name(10**30)
        path.write_bytes(b"")
    elif kind in ("bl", "bl_x_f0", "bl123_XYZ_f0", "bl0_0123abcd_f0", "bl123_0123abcd_f0:x", "bl123_0123abcd_f0\n"):
        path = shm / kind
        path.write_bytes(b"")
    elif kind == "another user's":
        path = shm / stale_name()
        path.write_bytes(b"")
        owned_by_another_user(path)
    elif kind == "directory":
        path = shm / stale_name()
        path.mkdir()
    elif kind == "link":
        target = shm.parent / "target"
        target.write_bytes(b"keep")
        path = shm / stale_name()
        path.symlink_to(target)
    else:
        raise AssertionError(kind)
    return path


HOSTILE = [
    "huge pid",
    "bl",
    "bl_x_f0",
    "bl123_XYZ_f0",
    "bl0_0123abcd_f0",
    "bl123_0123abcd_f0:x",
    "bl123_0123abcd_f0\n",
    "another user's",
    "directory",
    "link",
]


@pytest.fixture
def shm(tmp_path) -> Path:
    path = tmp_path / "shm"
    path.mkdir()
    return path


@pytest.mark.parametrize("kind", HOSTILE)
def test_the_sweep_removes_only_stale_segments_of_ours_and_never_fails(shm, kind):
    hostile = hostile_entry(shm, kind)
    ours = shm / stale_name()
    ours.write_bytes(b"\0" * 16)
    assert sweep_stale(str(shm)) == [ours.name]
    assert not ours.exists()
    assert os.path.lexists(hostile)
    if kind == "link":
        assert (shm.parent / "target").read_bytes() == b"keep"


@pytest.mark.parametrize("kind", HOSTILE)
def test_unlink_prefixed_removes_only_segments_of_ours(shm, kind):
    hostile = hostile_entry(shm, kind)
    ours = shm / stale_name(os.getpid())
    ours.write_bytes(b"\0" * 16)
    assert unlink_prefixed("bl", str(shm)) == 1  # a prefix of every name there
    assert not ours.exists()
    assert os.path.lexists(hostile)


def test_the_sweep_survives_an_unreadable_directory(tmp_path):
    assert sweep_stale(str(tmp_path / "missing")) == []
    assert unlink_prefixed("bl1_", str(tmp_path / "missing")) == 0


def test_a_file_another_user_made_in_dev_shm_does_not_stop_a_server_starting():
    """The real /dev/shm, with a file of this test's own: an empty file of another
    user's named like a dead server's segment made the sweep raise."""
    path = Path(SHM_DIR) / stale_name()
    path.write_bytes(b"")
    try:
        owned_by_another_user(path)
        assert path.name not in sweep_stale()
        assert path.exists()
    finally:
        path.unlink(missing_ok=True)
