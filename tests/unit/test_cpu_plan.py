"""CPU planning: OpenVINO predictor processes get disjoint CPU sets, op after op."""

from __future__ import annotations

from serving.config import LocalServiceConf
from serving.runners.cpu_plan import plan_cpus


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
