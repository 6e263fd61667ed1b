"""CPU planning: OpenVINO predictor processes get disjoint CPU sets, op after op and pipeline after pipeline."""

from __future__ import annotations

import itertools
import threading

import pytest

from serving.config import LocalServiceConf
from serving.runners.cpu_plan import CpuAllocator


def plan_cpus(confs, available=None):
    """One fresh allocator's sets for each conf in turn (the plan of one server start)."""
    allocator = CpuAllocator(available)
    return [allocator.allocate(conf) for conf in confs]


def conf(**service) -> LocalServiceConf:
    return LocalServiceConf(**service)


def ov(instances: int, threads: int = 1) -> LocalServiceConf:
    return conf(use_openvino=True, instance_mode="process", instance_num=instances, thread_num=threads)


CPUS = [0, 1, 2, 3]


def test_openvino_processes_get_disjoint_sets_op_after_op():
    assert plan_cpus([ov(2), ov(2)], CPUS) == [[[0], [1]], [[2], [3]]]
    assert plan_cpus([ov(2), ov(2, threads=2)], CPUS) == [[[0], [1]], [[2, 3], [0, 1]]]  # wraps round


def test_sets_are_capped_at_the_cpus_available():
    assert plan_cpus([ov(1, threads=16)], CPUS) == [[[0, 1, 2, 3]]]


def test_other_engines_and_thread_instances_are_not_pinned_and_take_no_cpus():
    onednn = conf(use_mkldnn=True, instance_mode="process", instance_num=2)
    thread = conf(use_openvino=True, instance_mode="thread", instance_num=2)
    assert plan_cpus([onednn, thread, ov(2)], CPUS) == [[None, None], [None, None], [[0], [1]]]


def test_default_is_this_process_affinity(monkeypatch):
    from serving.runners import cpu_plan

    monkeypatch.setattr(cpu_plan.os, "sched_getaffinity", lambda pid: {5, 7})
    assert plan_cpus([ov(3)]) == [[[5], [7], [5]]]


# ---- one allocator for every pipeline of the server --------------------------------
def test_two_pipelines_on_one_allocator_get_disjoint_sets():
    allocator = CpuAllocator(CPUS)
    det_a, rec_a = allocator.allocate(ov(1)), allocator.allocate(ov(1))  # pipeline A
    det_b, rec_b = allocator.allocate(ov(1)), allocator.allocate(ov(1))  # pipeline B, built later
    pinned = [cpu for sets in (det_a, rec_a, det_b, rec_b) for cpu_set in sets for cpu in cpu_set]
    assert sorted(pinned) == CPUS
    assert allocator.usage() == {0: 1, 1: 1, 2: 1, 3: 1}


def test_release_frees_the_cpus_for_the_next_pipeline():
    allocator = CpuAllocator(CPUS)
    old = allocator.allocate(ov(2))
    kept = allocator.allocate(ov(2))
    assert (old, kept) == ([[0], [1]], [[2], [3]])
    allocator.release(old)  # the old pipeline closed after a reload
    assert allocator.usage() == {0: 0, 1: 0, 2: 1, 3: 1}
    assert allocator.allocate(ov(2)) == [[0], [1]]  # the freed CPUs: 2 and 3 are still pinned
    allocator.release([None, None])  # unpinned instances take nothing, give back nothing
    assert allocator.usage() == {0: 1, 1: 1, 2: 1, 3: 1}


def test_when_cpus_run_out_the_least_used_are_shared_first():
    allocator = CpuAllocator(CPUS)
    allocator.allocate(ov(1, threads=3))  # 0, 1, 2
    assert allocator.allocate(ov(1, threads=2)) == [[3, 0]]  # 3 is free, then the first of the once-used
    assert allocator.usage() == {0: 2, 1: 1, 2: 1, 3: 1}
    assert allocator.allocate(ov(2, threads=2)) == [[1, 2], [3, 0]]


def test_unpinned_confs_take_nothing():
    allocator = CpuAllocator(CPUS)
    assert allocator.allocate(conf(use_mkldnn=True, instance_mode="process", instance_num=3)) == [None] * 3
    assert allocator.usage() == dict.fromkeys(CPUS, 0)


def test_bad_releases_change_nothing():
    allocator = CpuAllocator(CPUS)
    sets = allocator.allocate(ov(1, threads=2))
    with pytest.raises(ValueError, match="CPU 9"):
        allocator.release([[0], [9]])
    with pytest.raises(ValueError, match="released 2 times"):
        allocator.release(sets + sets)
    assert allocator.usage() == {0: 1, 1: 1, 2: 0, 3: 0}
    with pytest.raises(ValueError):
        CpuAllocator([])


def _wrapping_plan(confs, cpus):
    """The plan before the allocator: consecutive sets, op after op, wrapping round."""
    plan, offset = [], 0
    for c in confs:
        if c.use_openvino and c.instance_mode == "process":
            per = max(1, min(c.thread_num, len(cpus)))
            plan.append([[cpus[(offset + i * per + k) % len(cpus)] for k in range(per)] for i in range(c.instance_num)])
            offset += c.instance_num * per
        else:
            plan.append([None] * c.instance_num)
    return plan


def test_a_single_plan_is_the_consecutive_wrapping_plan():
    kinds = [ov(1), ov(2), ov(1, threads=3), ov(3, threads=2), ov(1, threads=9), conf(instance_num=2)]
    for cpus in ([0, 1, 2, 3], [0, 1, 2], [4, 6]):
        for confs in itertools.product(kinds, repeat=3):
            assert plan_cpus(confs, cpus) == _wrapping_plan(confs, cpus), (confs, cpus)


def test_concurrent_allocations_stay_balanced():
    allocator = CpuAllocator(CPUS)
    start = threading.Barrier(8)
    got = []

    def build():
        start.wait()
        got.append(allocator.allocate(ov(1)))

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(got) == 8 and allocator.usage() == {0: 2, 1: 2, 2: 2, 3: 2}
