"""Supervised predictor processes (serving.runners.process_supervisor) on a tiny real
Paddle model: a killed child is noticed and restarted without any run, runs
meanwhile get 503 at once, and an instance that cannot come back is marked
failed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time

import numpy as np
import pytest

pytest.importorskip("paddle")

from serving.errors import InstanceRestarting  # noqa: E402
from serving.runners.process import ProcessPredictor  # noqa: E402
from serving.runners.process_supervisor import Supervisor, exit_cause  # noqa: E402
from tests.support.tiny_model import make_conf  # noqa: E402
from tests.support.waiting import until  # noqa: E402

pytestmark = pytest.mark.slow  # child processes started, killed and restarted

X = np.ones((2, 4), np.float32)


@contextlib.contextmanager
def supervised(model_dir, **options):
    """A predictor process on ``model_dir`` under a started Supervisor;
    yields (runner, the causes of the deaths it noticed)."""
    runner = ProcessPredictor(make_conf(model_dir))
    deaths: list[str] = []
    supervisor = Supervisor("t", [runner], on_death=deaths.append, **options)
    supervisor.start()
    try:
        yield runner, deaths
    finally:
        supervisor.stop()
        runner.close()


def test_exit_causes_name_the_signal_or_the_code():
    assert exit_cause(-signal.SIGKILL) == "was killed by SIGKILL"
    assert exit_cause(-signal.SIGSEGV) == "was killed by SIGSEGV"
    assert exit_cause(3) == "exited with code 3"
    assert exit_cause(None) == "ended (exit status unknown)"


def test_a_killed_child_is_restarted_and_warmed_without_a_run(tiny_model):
    model_dir, _, _ = tiny_model
    warmed = []
    with supervised(model_dir, warm=lambda r: warmed.append(r.run({"x": X}))) as (runner, deaths):
        old = runner.pid
        os.kill(old, signal.SIGKILL)
        assert until(lambda: deaths), "the death was not noticed"
        assert deaths == ["was killed by SIGKILL"]
        assert until(lambda: runner.ready.is_set() and runner.pid not in (None, old))
        assert len(warmed) == 1 and not runner.failed
        assert runner.run({"x": X})[0].shape == (2, 3)


def test_a_run_while_restarting_waits_for_the_fresh_process_until_its_deadline(tiny_model):
    """The stage gives a restarting instance no batch, but one it took just as the
    process died waits for the fresh process, up to the batch's deadline, then 503."""
    model_dir, _, _ = tiny_model
    with supervised(model_dir, delays=(3.0,)) as (runner, _):  # a slow restart: time to look
        os.kill(runner.pid, signal.SIGKILL)
        assert until(lambda: not runner.ready.is_set(), 30)
        runner.run_deadline = time.monotonic() + 0.5
        started = time.monotonic()
        with pytest.raises(InstanceRestarting) as info:
            runner.run({"x": X})
        assert 0.4 < time.monotonic() - started < 2.0 and info.value.status == 503
        runner.run_deadline = time.monotonic() + 60
        assert runner.run({"x": X})[0].shape == (2, 3)  # waited for the fresh process
        assert runner.ready.is_set()


def test_an_instance_whose_model_vanished_is_marked_failed(tiny_model, tmp_path):
    model_dir, _, _ = tiny_model
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    with supervised(copy, delays=(0.0, 0.1)) as (runner, deaths):
        shutil.rmtree(copy)
        os.kill(runner.pid, signal.SIGKILL)
        assert until(lambda: runner.failed)
        assert deaths == ["was killed by SIGKILL"] and not runner.ready.is_set()
        with pytest.raises(InstanceRestarting):
            runner.run({"x": X})


def test_closing_is_not_a_death(tiny_model):
    model_dir, _, _ = tiny_model
    with supervised(model_dir, poll_s=0.05) as (_, deaths):
        pass  # leaving stops the supervisor, then closes the runner
    time.sleep(0.3)
    assert deaths == []


def test_a_hung_child_is_killed_at_the_batch_deadline_and_replaced(tiny_model):
    from serving.errors import DeadlineExceeded
    from serving.runners.process import HANG_GRACE_S

    model_dir, _, _ = tiny_model
    with supervised(model_dir) as (runner, deaths):
        hung = runner.pid
        os.kill(hung, signal.SIGSTOP)  # alive, never answers: a hang
        runner.run_deadline = time.monotonic() + 0.3
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match="hung"):
            runner.run({"x": X})
        assert 0.3 + HANG_GRACE_S - 0.1 <= time.monotonic() - started < 0.3 + HANG_GRACE_S + 5
        assert until(lambda: runner.ready.is_set() and runner.pid not in (None, hung))
        assert deaths == ["was killed by SIGKILL"]
        runner.run_deadline = time.monotonic() + 30
        assert runner.run({"x": X})[0].shape == (2, 3)
