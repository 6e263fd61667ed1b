"""Warm-up's seed runs are timed with every instance running at once, as batches
run under load (serving.batching.warmup.seed_seconds). Fake stage and runners: a
run can only finish while the other instance's run is under way too."""

from __future__ import annotations

import threading

import pytest

from serving.batching.warmup import seed_seconds


class _Stage:
    name = "fake"

    def __init__(self, run):
        self.run = run
        self.calls = []

    def run_batch(self, runner, batch, *, record=True):
        assert record is False  # seeds stay out of the metrics
        self.calls.append((runner, len(batch)))
        self.run(runner)


def _meeting(names):
    """A run of each runner waits until every runner's run of the same round has begun."""
    rounds = {}
    lock = threading.Lock()

    def run(runner):
        with lock:
            n = sum(1 for r in rounds.get("seen", []) if r == runner)
            rounds.setdefault("seen", []).append(runner)
            met = rounds.setdefault(n, threading.Barrier(len(names)))
        met.wait(timeout=10)  # raises BrokenBarrierError if the others never ran beside it

    return run


def test_every_instance_runs_the_seed_at_the_same_time():
    stage = _Stage(_meeting(["a", "b", "c"]))
    seconds = seed_seconds(stage, ["a", "b", "c"], ["item"] * 4)
    assert seconds >= 0
    assert sorted(stage.calls) == sorted([(r, 4) for r in "abc"] * 2)  # two runs each: the second is timed


def test_one_instance_runs_alone_in_the_calling_thread():
    caller = threading.get_ident()
    threads = []
    stage = _Stage(lambda runner: threads.append(threading.get_ident()))
    seed_seconds(stage, ["only"], ["item"])
    assert threads == [caller, caller]


def test_a_failing_instance_raises_its_own_error_and_leaves_no_one_waiting():
    def run(runner):
        if runner == "bad":
            raise RuntimeError("predictor failed")
        threading.Event().wait(0.05)

    with pytest.raises(RuntimeError, match="predictor failed"):
        seed_seconds(_Stage(run), ["good", "bad", "good2"], ["item"])
