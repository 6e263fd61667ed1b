"""CPU sets for processes of one machine that share no allocator (the replicas of a
Ray node), coordinated through a claims file (serving/runners/node_cpus.py).

Each allocator stands for one process: its ``pid`` keys its claim, and claims
of pids that are not alive are ignored. The two living pids are this test's
process and its parent; a dead pid comes from a child that has exited and been
reaped. The CPUs are a fixed list, never this machine's, so plans are exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def test_the_default_claims_file_is_per_user_in_the_temp_dir(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    me = NodeCpuAllocator(available=CPUS)
    assert me.path == str(tmp_path / f"batchline-cpu-claims-{os.getuid()}.json")
    assert me.pid == os.getpid()


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
