"""The memory guard (``max_rss_mb``): a predictor process over its limit is
replaced gracefully, between runs, with no run failing; and the op's own model
(``Op.model_factory``) runs in predictor processes. The model is the
fault-injection op's (tests/support/fault_op.py), leaking on purpose."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading

import numpy as np
import pytest

from serving.batching.launch import runners_for
from serving.config.errors import ConfigError
from serving.config.schema import LocalServiceConf
from serving.runners.process import ProcessPredictor
from serving.runners.process_supervisor import Supervisor
from tests.support.fault_op import WARMUP, FaultModel, FaultOp
from tests.support.ops import make_op
from tests.support.waiting import until

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the guard reads RSS from /proc")


def feed(n: int = 2, code: int = 0) -> dict[str, np.ndarray]:
    return {"x": np.arange(n, dtype=np.float32), "fault": np.full(n, code, np.int32)}


@contextlib.contextmanager
def guarded(params: dict, max_rss_mb: int | None, **options):
    """A supervised predictor process running FaultModel(params); yields
    (runner, list of the RSS that made it recycle, warm-up runs seen)."""
    conf = LocalServiceConf(instance_mode="process", max_rss_mb=max_rss_mb)
    runner = ProcessPredictor(conf, factory=functools.partial(FaultModel, params), label="guard")
    recycles: list[int] = []
    warmed: list[int] = []

    def warm(r):
        warmed.append(len(r.run(feed(1, WARMUP))[0]))

    supervisor = Supervisor("t", [runner], on_recycle=recycles.append, warm=warm, poll_s=0.1, **options)
    supervisor.start()
    try:
        yield runner, recycles, warmed
    finally:
        supervisor.stop()
        runner.close()


def test_the_ops_own_model_runs_in_a_predictor_process():
    runner = ProcessPredictor(LocalServiceConf(instance_mode="process"), factory=functools.partial(FaultModel, {}))
    try:
        assert runner.pid != os.getpid() and runner.input_names == ["x", "fault"]
        np.testing.assert_array_equal(runner.run(feed(3))[0], [0, 2, 4])
    finally:
        runner.close()


def test_the_engine_builds_model_factory_runners_in_processes_or_in_process():
    op = make_op(FaultOp, instance_mode="process", instance_num=2)
    runners = runners_for(op, 2)
    try:
        assert all(isinstance(r, ProcessPredictor) for r in runners) and len({r.pid for r in runners}) == 2
    finally:
        for r in runners:
            r.close()
    (in_process,) = runners_for(make_op(FaultOp), 1)
    assert isinstance(in_process, FaultModel)


@pytest.mark.slow
def test_a_leaking_process_is_replaced_while_runs_go_on_and_none_fails():
    with guarded({}, max_rss_mb=None) as (runner, recycles, warmed):
        baseline = runner.rss_bytes()
        assert baseline
    # the limit must sit above a fresh process's RSS: measure one, then set it 40 MiB higher
    limit = (baseline >> 20) + 40
    with guarded({"leak_mb": 1, "delay_ms": 40}, max_rss_mb=limit) as (runner, recycles, warmed):
        first = runner.pid
        errors: list[BaseException] = []
        runs = 0
        stop = threading.Event()

        def hammer():
            nonlocal runs
            while not stop.is_set():
                try:
                    assert runner.run(feed(2))[0].tolist() == [0.0, 2.0]
                    runs += 1
                except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                    errors.append(exc)

        thread = threading.Thread(target=hammer)
        thread.start()
        try:
            assert until(lambda: len(recycles) >= 2, timeout=60), "the guard never replaced the process"
        finally:
            stop.set()
            thread.join(30)
        assert not errors, errors[:3]
        assert runs > 20 and runner.pid != first
        assert all(rss > limit << 20 for rss in recycles)
        assert len(warmed) >= 2  # each replacement was warmed before it took runs
        old = [p for p in (first,) if os.path.exists(f"/proc/{p}")]
        assert until(lambda: not any(os.path.exists(f"/proc/{p}/status") for p in old), timeout=15)
        assert not [n for n in os.listdir("/dev/shm") if n.startswith(runner.shm_prefix + "w")]


def test_a_limit_below_a_fresh_process_turns_the_guard_off_after_one_replacement(caplog):
    with caplog.at_level(logging.ERROR, logger="serving.runners.process_supervisor"):
        with guarded({}, max_rss_mb=1) as (runner, recycles, _):
            assert until(lambda: "memory guard is off" in caplog.text, timeout=30)
            pid = runner.pid
            assert runner.run(feed(2))[0].tolist() == [0.0, 2.0]
            assert not until(lambda: runner.pid != pid, timeout=1.0)
        assert len(recycles) == 1


def test_a_replacement_that_cannot_start_leaves_the_old_process_serving(caplog):
    def failing_warm(_runner):
        raise RuntimeError("warm-up failed")

    conf = LocalServiceConf(instance_mode="process", max_rss_mb=1)
    runner = ProcessPredictor(conf, factory=functools.partial(FaultModel, {}))
    supervisor = Supervisor("t", [runner], warm=failing_warm, poll_s=0.1)
    with caplog.at_level(logging.ERROR, logger="serving.runners.process_supervisor"):
        supervisor.start()
        try:
            pid = runner.pid
            assert until(lambda: "could not start a replacement" in caplog.text, timeout=30)
            assert runner.pid == pid and runner.ready.is_set()
            assert runner.run(feed(2))[0].tolist() == [0.0, 2.0]
        finally:
            supervisor.stop()
            runner.close()


def test_max_rss_mb_needs_predictor_processes(tmp_path):
    from serving.config.load import load_config

    path = tmp_path / "c.yml"
    path.write_text(
        "name: p\nop:\n  a:\n    class: tests.support.fault_op:FaultOp\n    local_service_conf: {max_rss_mb: 500}\n"
    )
    with pytest.raises(ConfigError, match=r"c\.yml.*max_rss_mb.*instance_mode: process"):
        load_config(str(path))


def test_max_rss_mb_is_refused_for_a_device_process(tmp_path):
    """The memory guard recycles one instance's process; a device process holds every op's."""
    from serving.config.load import load_config

    path = tmp_path / "c.yml"
    path.write_text(
        "name: p\nop:\n  a:\n    class: tests.support.fault_op:FaultOp\n"
        "    local_service_conf: {max_rss_mb: 500, instance_mode: device_process}\n"
    )
    with pytest.raises(ConfigError, match=r"c\.yml.*max_rss_mb.*device_process.*use instance_mode: process"):
        load_config(str(path))
