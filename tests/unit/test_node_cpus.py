"""CPU sets for processes of one machine that share no allocator (the replicas of a
Ray node), coordinated through a claims file (serving/runners/node_cpus.py).

Each allocator stands for one process: its ``pid`` keys its claim, and claims
of pids that are not alive are ignored. The two living pids are this test's
process and its parent; a dead pid comes from a child that has exited and been
reaped. The CPUs are a fixed list, never this machine's, so plans are exact.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from serving.config import LocalServiceConf
from serving.runners.cpu_plan import CpuAllocator
from serving.runners.node_cpus import NodeCpuAllocator

CPUS = [0, 1, 2, 3]


def ov(instances: int = 1, threads: int = 1) -> LocalServiceConf:
    """An OpenVINO process instance config: the kind whose instances are pinned."""
    return LocalServiceConf(use_openvino=True, instance_mode="process", instance_num=instances, thread_num=threads)


@pytest.fixture
def claims(tmp_path) -> Path:
    return tmp_path / "claims.json"


def allocator(claims: Path, pid: int) -> NodeCpuAllocator:
    return NodeCpuAllocator(str(claims), CPUS, pid=pid)


def read(claims: Path) -> dict[str, list[int]]:
    return json.loads(claims.read_text())


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def cpus_of(sets) -> list[int]:
    return sorted(cpu for cpu_set in sets for cpu in cpu_set)


def test_two_processes_spread_onto_different_cpus(claims):
    me, parent = allocator(claims, os.getpid()), allocator(claims, os.getppid())
    assert me.allocate(ov(2)) == [[0], [1]]
    assert parent.allocate(ov(2)) == [[2], [3]]
    assert read(claims) == {str(os.getpid()): [0, 1], str(os.getppid()): [2, 3]}


def test_each_set_goes_to_the_least_used_cpu_machine_wide(claims):
    me, parent = allocator(claims, os.getpid()), allocator(claims, os.getppid())
    assert me.allocate(ov(1)) == [[0]]
    assert parent.allocate(ov(1)) == [[1]]
    assert me.allocate(ov(1)) == [[2]]  # not CPU 1: free in this allocator, taken on the machine


def test_a_process_wraps_round_only_once_every_cpu_is_taken(claims):
    me, parent = allocator(claims, os.getpid()), allocator(claims, os.getppid())
    parent.allocate(ov(1, threads=3))  # CPUs 0-2
    assert me.allocate(ov(2)) == [[3], [0]]


def test_claims_of_dead_processes_are_ignored_and_dropped(claims):
    gone = dead_pid()
    claims.write_text(json.dumps({str(gone): [0, 1, 2, 3]}))
    me = allocator(claims, os.getpid())
    assert me.allocate(ov(2)) == [[0], [1]]
    assert read(claims) == {str(os.getpid()): [0, 1]}


def test_release_removes_the_claim(claims):
    me, parent = allocator(claims, os.getpid()), allocator(claims, os.getppid())
    first, second = me.allocate(ov(1)), me.allocate(ov(1))
    parent.allocate(ov(1))
    me.release(first)
    assert read(claims) == {str(os.getpid()): [1], str(os.getppid()): [2]}
    me.release(second)
    assert read(claims) == {str(os.getppid()): [2]}
    assert me.allocate(ov(1)) == [[0]]  # freed CPUs are the least used again


@pytest.mark.parametrize("garbage", ["", '{"123": [0, 1', "\x00\xff not json at all", "{}"])
def test_a_torn_or_garbage_file_is_tolerated(claims, garbage):
    claims.write_bytes(garbage.encode("utf-8", "surrogateescape"))
    me = allocator(claims, os.getpid())
    assert me.allocate(ov(1)) == [[0]]
    assert read(claims) == {str(os.getpid()): [0]}


def test_unpinned_instances_claim_no_cpus(claims):
    me = allocator(claims, os.getpid())
    assert me.allocate(LocalServiceConf(instance_num=2)) == [None, None]
    assert read(claims) in ({}, {str(os.getpid()): []})


def test_the_default_claims_file_is_in_a_private_directory_in_the_temp_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    me = NodeCpuAllocator(available=CPUS)
    private = tmp_path / f"batchline-{os.geteuid()}"
    assert me.path == str(private / "cpu-claims.json")
    assert me.pid == os.getpid()
    assert me.allocate(ov(1)) == [[0]]
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert stat.S_IMODE((private / "cpu-claims.json").stat().st_mode) == 0o600
    assert read(private / "cpu-claims.json") == {str(os.getpid()): [0]}


def test_the_default_claims_file_is_in_the_runtime_dir_where_there_is_one(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert NodeCpuAllocator(available=CPUS).path == str(tmp_path / "batchline" / "cpu-claims.json")


# ----------------------------------------------------------------------------- what others may have put there
# The temp directory is shared: anyone may create the private directory's name first, or a
# link; and anything may be in the file. Unusable: the process allocates as if alone, says
# so once, and writes nothing. Malformed: no claims.

OTHER_UID = 65534  # nobody


def owned_by_another_user(path: Path) -> None:
    try:
        os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)
    except PermissionError:
        pytest.skip("giving a file to another user takes root")


def claim_of_parent(path: Path) -> None:
    path.write_text(json.dumps({str(os.getppid()): [0, 1]}))


def alone(path: Path, caplog) -> None:
    """An allocator on ``path`` allocates as if no other process claimed a CPU, and warns once."""
    me = NodeCpuAllocator(str(path), CPUS, pid=os.getpid())
    with caplog.at_level(logging.WARNING, logger="serving.runners.node_cpus"):
        assert me.allocate(ov(1)) == [[0]]
        assert me.allocate(ov(1)) == [[1]]
        me.release([[0], [1]])
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
    assert "not shared" in caplog.records[0].getMessage() and len(caplog.records) == 1


def test_a_link_is_not_followed(tmp_path, caplog):
    elsewhere = tmp_path / "elsewhere"
    claim_of_parent(elsewhere)
    before = elsewhere.read_bytes()
    link = tmp_path / "claims.json"
    link.symlink_to(elsewhere)
    alone(link, caplog)
    assert link.is_symlink() and elsewhere.read_bytes() == before


def test_a_linked_directory_is_not_followed(tmp_path, caplog):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    claim_of_parent(private / "claims.json")
    (tmp_path / "link").symlink_to(private)
    alone(tmp_path / "link" / "claims.json", caplog)
    assert read(private / "claims.json") == {str(os.getppid()): [0, 1]}


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o755], ids=lambda m: f"{m:04o}")
def test_a_directory_others_may_write_to_or_read_is_refused(tmp_path, caplog, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    alone(shared / "claims.json", caplog)
    assert not (shared / "claims.json").exists()
    assert stat.S_IMODE(shared.stat().st_mode) == mode  # not ours to change


def test_a_directory_of_another_user_is_refused(tmp_path, caplog):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    owned_by_another_user(theirs)
    alone(theirs / "claims.json", caplog)
    assert not (theirs / "claims.json").exists()


def test_a_file_of_another_user_is_neither_read_nor_written(claims, caplog):
    claim_of_parent(claims)
    owned_by_another_user(claims)
    alone(claims, caplog)
    assert read(claims) == {str(os.getppid()): [0, 1]}


def test_a_directory_where_the_file_should_be(claims, caplog):
    claims.mkdir()
    alone(claims, caplog)
    assert claims.is_dir()


MALFORMED = {
    "a list": "[0, 1]",
    "a string": '"claims"',
    "null": "null",
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "a pid too large for any process": '{"%s": [0, 1]}' % ("9" * 40),
    "a negative pid": '{"-1": [0, 1]}',
    "not a pid": '{"PID": [0, 1]}',
    "not a list": '{"PPID": 0}',
    "a string of CPUs": '{"PPID": "0,1"}',
    "booleans": '{"PPID": [true, false]}',
    "a negative CPU": '{"PPID": [-1, 0]}',
    "an infinite CPU": '{"PPID": [1e400]}',
    "over the size bound": '{"PPID": [0, 1], "pad": "%s"}' % ("x" * (2 << 20)),
}


@pytest.mark.parametrize("content", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_claims_count_as_none(claims, content):
    claims.write_text(content.replace("PPID", str(os.getppid())))
    me = allocator(claims, os.getpid())
    assert me.allocate(ov(1)) == [[0]]
    assert read(claims) == {str(os.getpid()): [0]}


def test_a_malformed_claim_does_not_hide_the_others(claims):
    claims.write_text(json.dumps({str(os.getppid()): [0, 1], "x": [2, 3], "12": {"a": 1}}))
    assert allocator(claims, os.getpid()).allocate(ov(1)) == [[2]]


# ----------------------------------------------------------------------------- CpuAllocator.allocate(elsewhere)


def test_elsewhere_counts_instances_other_processes_pinned():
    plan = CpuAllocator(CPUS)
    assert plan.allocate(ov(2), elsewhere={0: 1, 1: 1}) == [[2], [3]]
    # other processes' instances count with this allocator's own, and are not recorded as its own
    assert plan.allocate(ov(2), elsewhere={0: 1, 1: 1}) == [[0], [1]]
    assert plan.usage() == {0: 1, 1: 1, 2: 1, 3: 1}
    assert plan.allocate(ov(1, threads=2), elsewhere={0: 5, 1: 5, 2: 5}) == [[3, 0]]


def test_elsewhere_does_not_pin_what_is_not_pinned():
    plan = CpuAllocator(CPUS)
    assert plan.allocate(LocalServiceConf(instance_num=2), elsewhere={0: 9}) == [None, None]
    assert plan.usage() == dict.fromkeys(CPUS, 0)
