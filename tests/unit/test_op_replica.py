"""The body of an op deployment (:class:`serving.rayserve.op_replica.OpReplica`)
without Ray: calls from many requests meet in the replica's own op stage and
batch together; each call gets its own answer or its own error status; a call
the caller cancels is dropped before it reaches the predictor.

The op is :class:`tests.support.ray_fakes.GateOp` (EchoTextOp: text -> its
doubled length; "bad" is a bad input, "boom" fails the predictor), whose
predictor holds each batch until the test opens its gate: the test knows what
is running and what waits in the batcher, so batch contents are asserted, not
timed. Every wait has a generous limit that only guards against a hang.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from serving.rayserve.op_replica import OpReplica
from serving.rayserve.wire import OpCall, OpReply
from tests.support.engine_fakes import TextSplitOp
from tests.support.ray_fakes import HANG_GUARD_S, RAY_FAKES, as_dicts, document, gate, op_conf

TIMEOUT_S = 60.0  # each call's deadline: far beyond what the test needs


def replica_of(gate_name: str, *, priority_levels: int = 1, **svc) -> OpReplica:
    ops = {"echo": op_conf("GateOp", params={"gate": gate_name}, module=RAY_FAKES, **svc)}
    dag = {"request_timeout_ms": 60000, "priority_levels": priority_levels, "priority_max_wait_ms": 600000}
    doc = document("p", ops, dag=dag)
    return OpReplica(as_dicts([doc]), "p", 1, "echo", None, warmup=False)


@pytest.fixture
def replicas(tmp_path, monkeypatch):
    """Replicas made by the test, stopped at its end (as Ray's graceful shutdown does);
    their node-wide CPU claims go to a file of the test's own."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made: list[OpReplica] = []

    def make(*args, **kwargs) -> OpReplica:
        made.append(replica_of(*args, **kwargs))
        return made[-1]

    yield make
    for replica in made:
        replica.__del__()


def call(text: str, priority: int = 0) -> OpCall:
    return OpCall({"input": text}, TIMEOUT_S, priority=priority)


async def until(condition, what: str) -> None:
    """Poll ``condition`` on the event loop (the replica's threads make it true)."""
    end = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"not within {HANG_GUARD_S}s: {what}")
        await asyncio.sleep(0.005)


async def wait_event(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, HANG_GUARD_S), "the predictor never got a batch"


def status_of(reply: OpReply) -> int:
    return 200 if reply.error is None else reply.error[0]


def test_concurrent_calls_batch_together_and_each_gets_its_own_answer(replicas):
    held = gate("batching")
    replica = replicas("batching", max_batch_size=8)
    texts = ["x" * k for k in range(1, 13)]

    async def main() -> list[OpReply]:
        first = asyncio.ensure_future(replica.run(call(texts[0])))
        await wait_event(held.entered)  # the first call's batch holds the one instance
        rest = [asyncio.ensure_future(replica.run(call(t))) for t in texts[1:]]
        await until(lambda: replica.stage.batcher.depth == len(rest), "the other calls queue in the batcher")
        held.go.set()
        return await asyncio.wait_for(asyncio.gather(first, *rest), HANG_GUARD_S)

    replies = asyncio.run(main())
    assert [r.error for r in replies] == [None] * len(texts)
    assert [r.output for r in replies] == [{"text": t, "double_len": 2 * len(t)} for t in texts]
    sizes = [len(batch) for batch in held.seen]
    assert sizes[0] == 1 and max(sizes[1:]) == 8  # the queued calls went to the predictor 8 at a time
    assert sum(sizes) == len(texts)
    for reply in replies:  # every answer says which batch it ran in
        assert reply.timeline and {t.op for t in reply.timeline} == {"echo"}
    assert {r.timeline[0].batch_size for r in replies[1:]} <= {8, 3}


def test_an_item_the_predictor_fails_on_gets_500_and_its_batch_mates_succeed(replicas):
    held = gate("failing")
    replica = replicas("failing", max_batch_size=8)

    async def main() -> list[OpReply]:
        first = asyncio.ensure_future(replica.run(call("hold")))
        await wait_event(held.entered)
        rest = [asyncio.ensure_future(replica.run(call(t))) for t in ("ab", "boom", "abc", "abcd")]
        await until(lambda: replica.stage.batcher.depth == 4, "four calls queue")
        held.go.set()
        return await asyncio.wait_for(asyncio.gather(first, *rest), HANG_GUARD_S)

    hold, ab, boom, abc, abcd = asyncio.run(main())
    assert held.seen[1] == [2.0, -1.0, 3.0, 4.0]  # the four ran as one batch, which failed...
    assert status_of(boom) == 500 and "predictor" in boom.error[1]  # ...and, item by item, only boom failed
    ok = (hold, ab, abc, abcd)
    assert [r.output for r in ok] == [{"text": t, "double_len": 2 * len(t)} for t in ("hold", "ab", "abc", "abcd")]


def test_a_bad_input_gets_400_with_its_message(replicas):
    held = gate("bad")
    held.go.set()
    replica = replicas("bad")

    async def main() -> tuple[OpReply, OpReply]:
        return await asyncio.wait_for(asyncio.gather(replica.run(call("bad")), replica.run(call("ok"))), HANG_GUARD_S)

    bad, ok = asyncio.run(main())
    assert status_of(bad) == 400 and "text 'bad' rejected" in bad.error[1]
    assert ok.output == {"text": "ok", "double_len": 4}


def test_a_call_the_caller_cancels_is_dropped_before_the_predictor(replicas):
    held = gate("cancel")
    replica = replicas("cancel", max_batch_size=1)

    async def main() -> tuple[OpReply, OpReply]:
        first = asyncio.ensure_future(replica.run(call("a")))
        await wait_event(held.entered)
        doomed = asyncio.ensure_future(replica.run(call("bbbbb")))
        await until(lambda: replica.stage.batcher.depth == 1, "the second call queues behind the first")
        doomed.cancel()  # e.g. the ingress's request hit its deadline: Ray cancels the call
        with pytest.raises(asyncio.CancelledError):
            await doomed
        later = asyncio.ensure_future(replica.run(call("cc")))
        held.go.set()
        return await asyncio.wait_for(asyncio.gather(first, later), HANG_GUARD_S)

    first, later = asyncio.run(main())
    assert (first.output["double_len"], later.output["double_len"]) == (2, 4)
    assert held.seen == [[1.0], [2.0]]  # "bbbbb" (5.0) never reached the predictor


def test_priorities_cross_the_wire_higher_first(replicas):
    held = gate("priority")
    replica = replicas("priority", priority_levels=2, max_batch_size=1)

    async def main() -> list[OpReply]:
        first = asyncio.ensure_future(replica.run(call("a")))
        await wait_event(held.entered)
        low = asyncio.ensure_future(replica.run(call("bb", priority=0)))
        await until(lambda: replica.stage.batcher.depth == 1, "the low-priority call queues")
        high = asyncio.ensure_future(replica.run(call("ccc", priority=1)))
        await until(lambda: replica.stage.batcher.depth == 2, "the high-priority call queues")
        held.go.set()
        return await asyncio.wait_for(asyncio.gather(first, low, high), HANG_GUARD_S)

    replies = asyncio.run(main())
    assert [r.error for r in replies] == [None, None, None]
    assert held.seen == [[1.0], [3.0], [2.0]]  # queued later, run first


def test_a_call_past_its_deadline_gets_504_without_running(replicas):
    held = gate("deadline")
    held.go.set()
    replica = replicas("deadline")
    reply = asyncio.run(asyncio.wait_for(replica.run(OpCall({"input": "late"}, 0.0)), HANG_GUARD_S))
    assert status_of(reply) == 504
    assert held.seen == []


def test_health_check_fails_once_the_stage_stopped(replicas):
    held = gate("health")
    held.go.set()
    replica = replicas("health")
    replica.check_health()
    replica.__del__()
    with pytest.raises(RuntimeError, match="stage stopped"):
        replica.check_health()
    replica.__del__()  # Ray calls it once, Python's collector may call it again: harmless


def test_health_check_fails_once_no_instance_can_come_back(replicas):
    held = gate("broken")
    held.go.set()
    replica = replicas("broken", instance_num=2)
    runners = replica.stage._runners
    for runner in runners:  # as a supervised predictor process is (serving.runners.process_supervisor.Restartable)
        runner.ready, runner.failed = threading.Event(), False
    runners[0].failed = True  # what the supervisor marks after its last restart attempt
    replica.check_health()  # one instance left: healthy
    runners[1].failed = True
    with pytest.raises(RuntimeError, match="no predictor instance could be restarted"):
        replica.check_health()


def test_a_replica_with_pinned_instances_claims_cpus_node_wide_and_gives_them_back_once(replicas):
    import json

    held = gate("pinned")
    held.go.set()
    replica = replicas("pinned", use_openvino=True, instance_mode="process", instance_num=1, thread_num=1)
    claims = json.loads(Path(replica._cpus.path).read_text())
    assert len(claims[str(os.getpid())]) == 1  # its one instance's CPU, visible to the node's other replicas
    replica.__del__()
    assert json.loads(Path(replica._cpus.path).read_text()) == {}
    replica.__del__()  # again (Python's collector after Ray): no second release


class ConsumerNamingSplitOp(TextSplitOp):
    """TextSplitOp whose output, as it leaves its replica, names the op classes it goes to."""

    def output_for(self, output, consumers):
        return {**output, "consumers": sorted(c.__name__ for c in consumers)}


@pytest.mark.parametrize(
    "ops, consumers",
    [
        ({"x": op_conf("ConsumerNamingSplitOp", module=__name__), "add": op_conf("AddOp", ["x"])}, ["AddOp"]),
        ({"x": op_conf("ConsumerNamingSplitOp", module=__name__)}, None),  # a sink: its output is the answer
        (  # shared: its consumers differ by pipeline
            {"x": op_conf("ConsumerNamingSplitOp", module=__name__, share="s"), "add": op_conf("AddOp", ["x"])},
            None,
        ),
    ],
    ids=["consumed", "sink", "shared"],
)
def test_an_output_leaves_the_replica_as_its_consumers_need_it(tmp_path, monkeypatch, ops, consumers):
    """Op.output_for, given the classes of the ops the output goes to; never for a sink or a shared op."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    replica = OpReplica(as_dicts([document("p", ops)]), "p", 1, "x", None, warmup=False)
    try:
        reply = asyncio.run(replica.run(OpCall({"input": "7 3"}, TIMEOUT_S)))
    finally:
        replica.__del__()
    assert reply.error is None and reply.output["id"] == 7
    assert reply.output.get("consumers") == consumers


def test_the_replica_exports_where_its_instances_run(replicas):
    gate("placed").go.set()
    replica = replicas("placed", instance_num=2)
    text = replica.metrics.render().decode()
    for index in (0, 1):
        labels = f'device="cpu",instance="{index}",op="echo",pipeline="p",version="1"'
        assert f"batchline_op_instance_device{{{labels}}} 1.0" in text
