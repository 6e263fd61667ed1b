"""ProcessPredictor: a Paddle predictor in a child process fed through shared memory."""

from __future__ import annotations

import os
import re
import signal

import numpy as np
import pytest

pytest.importorskip("paddle")

from serving.batching.launch import runners_for  # noqa: E402
from serving.runners.process import ProcessPredictor  # noqa: E402
from tests.support.ops import make_op  # noqa: E402
from tests.support.tiny_model import expected, make_conf  # noqa: E402

pytestmark = pytest.mark.slow  # child processes started, killed and restarted


@pytest.fixture(scope="module")
def runner(tiny_model):
    model_dir, _, _ = tiny_model
    predictor = ProcessPredictor(make_conf(model_dir))
    yield predictor
    predictor.close()


def test_runs_in_a_child_process_and_matches_numpy(runner, tiny_model):
    _, weight, bias = tiny_model
    assert runner.pid and runner.pid != os.getpid()
    assert runner.input_names == ["x"]
    for n in (1, 7):
        x = np.random.default_rng(n).random((n, 4), dtype=np.float32)
        (out,) = runner.run({"x": x})
        np.testing.assert_allclose(out, expected(x, weight, bias), rtol=1e-5, atol=1e-6)
    first = runner.run({"x": np.ones((2, 4), np.float32)})[0]
    runner.run({"x": np.zeros((2, 4), np.float32)})
    assert first.sum() > 0  # outputs are copies, not views of a reused buffer


def test_feeds_larger_than_the_initial_segment(runner, tiny_model):
    _, weight, bias = tiny_model
    x = np.random.default_rng(0).random((200_000, 4), dtype=np.float32)  # 3.2 MB in, 2.4 MB out
    (out,) = runner.run({"x": x})
    np.testing.assert_allclose(out[-5:], expected(x[-5:], weight, bias), rtol=1e-5, atol=1e-6)


def test_bad_feed_and_model_errors_are_raised_and_the_child_survives(runner):
    with pytest.raises(ValueError, match="missing"):
        runner.run({"y": np.ones((1, 4), np.float32)})
    with pytest.raises(RuntimeError, match="predictor process"):
        runner.run({"x": np.ones((1, 5), np.float32)})  # wrong width
    assert runner.run({"x": np.ones((1, 4), np.float32)})[0].shape == (1, 3)


def test_a_killed_child_fails_one_run_then_restarts(runner):
    old = runner.pid
    os.kill(old, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="died"):
        runner.run({"x": np.ones((1, 4), np.float32)})
    assert runner.run({"x": np.ones((1, 4), np.float32)})[0].shape == (1, 3)
    assert runner.pid != old


def test_load_failure_is_reported(tmp_path):
    (tmp_path / "inference.pdmodel").write_bytes(b"not a model")
    (tmp_path / "inference.pdiparams").write_bytes(b"")
    with pytest.raises(RuntimeError, match="failed to load"):
        ProcessPredictor(make_conf(tmp_path))


def test_the_engine_builds_process_runners_for_instance_mode_process(tiny_model):
    from serving.op import Op

    model_dir, _, _ = tiny_model
    op = make_op(Op, model_dir=str(model_dir), instance_mode="process", thread_num=1)
    runners = runners_for(op, 2)
    try:
        assert all(isinstance(r, ProcessPredictor) for r in runners)
        assert len({r.pid for r in runners}) == 2
    finally:
        for r in runners:
            r.close()
    assert all(r.pid is None for r in runners)


def test_a_pinned_child_runs_on_its_cpu(tiny_model):
    import os as _os

    model_dir, weight, bias = tiny_model
    cpu = max(_os.sched_getaffinity(0))
    runner = ProcessPredictor(make_conf(model_dir), cpus=[cpu])
    try:
        x = np.ones((2, 4), np.float32)
        np.testing.assert_allclose(runner.run({"x": x})[0], expected(x, weight, bias), rtol=1e-5, atol=1e-5)
        assert _os.sched_getaffinity(runner.pid) == {cpu}
    finally:
        runner.close()


def test_an_idle_cpu_child_runs_in_the_idle_class_also_after_a_restart(tiny_model):
    model_dir, _, _ = tiny_model
    runner = ProcessPredictor(make_conf(model_dir), idle_cpu=True)
    try:
        assert os.sched_getscheduler(runner.pid) == os.SCHED_IDLE
        assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the server itself is untouched
        os.kill(runner.pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="died"):
            runner.run({"x": np.ones((1, 4), np.float32)})
        runner.run({"x": np.ones((1, 4), np.float32)})  # a fresh child ...
        assert os.sched_getscheduler(runner.pid) == os.SCHED_IDLE  # ... in the idle class as the first
    finally:
        runner.close()


def test_create_runners_passes_idle_cpu_to_process_instances(tiny_model):
    from serving.runners.factory import create_runners

    model_dir, _, _ = tiny_model
    runners = create_runners(make_conf(model_dir, instance_mode="process"), 1, idle_cpu=True)
    try:
        (runner,) = runners
        assert isinstance(runner, ProcessPredictor)
        assert os.sched_getscheduler(runner.pid) == os.SCHED_IDLE
    finally:
        for r in runners:
            r.close()


def _segments(prefix: str) -> list[str]:
    """The uses of the segments named ``prefix<use><16 random hex digits>``, sorted."""
    names = [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]
    assert all(re.fullmatch(r"[0-9a-z_]+[0-9a-f]{16}", n[len(prefix) :]) for n in names), names
    return sorted(n[len(prefix) : -16] for n in names)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="Linux lists POSIX shared memory in /dev/shm")
def test_no_segment_outlives_the_predictor_even_after_a_killed_child(tiny_model):
    model_dir, _, _ = tiny_model
    runner = ProcessPredictor(make_conf(model_dir))
    prefix = runner.shm_prefix
    try:
        runner.run({"x": np.ones((3, 4), np.float32)})
        assert _segments(prefix) == ["f", "o1_"]  # the feed, the first child's output
        os.kill(runner.pid, signal.SIGKILL)
        try:
            runner.run({"x": np.ones((3, 4), np.float32)})  # may meet the dying child: fails, or restarts it
        except RuntimeError:
            pass
        runner.run({"x": np.ones((3, 4), np.float32)})
        assert _segments(prefix) == ["f", "o2_"]  # the dead child's output is gone
    finally:
        runner.close()
    assert _segments(prefix) == []


SCRIPT = """
import os, signal, sys
import numpy as np
from serving.runners.process import ProcessPredictor
from tests.support.tiny_model import make_conf

if __name__ == "__main__":
    runner = ProcessPredictor(make_conf(sys.argv[1]))
    x = np.ones((3, 4), np.float32)
    runner.run({"x": x})
    os.kill(runner.pid, signal.SIGKILL)
    runner.child.join(5)
    runner.run({"x": x})
    runner.close()
    print("done")
"""


def test_a_killed_child_leaves_nothing_for_the_resource_tracker(tiny_model, tmp_path):
    """Python's resource tracker warns at exit about every segment nobody unlinked."""
    import subprocess
    import sys

    from tests.support.server_process import ROOT

    model_dir, _, _ = tiny_model
    script = tmp_path / "kill_child.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, str(script), str(model_dir)], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT
    )
    assert done.returncode == 0 and "done" in done.stdout, done.stderr
    assert "resource_tracker" not in done.stderr and "leaked" not in done.stderr, done.stderr


def test_a_labelled_child_is_named_after_its_op(tiny_model):
    model_dir, _, _ = tiny_model
    runner = ProcessPredictor(make_conf(model_dir), label="rec")
    try:
        with open(f"/proc/{runner.pid}/comm", encoding="utf-8") as f:
            assert f.read().strip() == "bl-rec"
    finally:
        runner.close()
