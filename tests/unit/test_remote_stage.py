"""The ingress side of an op deployment (:class:`serving.rayserve.remote_stage.RemoteStage`)
inside a real :class:`serving.batching.pipeline.Pipeline`, without Ray: every op's
stage is a RemoteStage whose ``send`` is either the real replica body
(:class:`serving.rayserve.op_replica.OpReplica` in this process, through
:class:`tests.support.ray_fakes.FakeHandle`) or a fake that fails the way a
cluster does (a replica dies, Ray refuses the call, the call never returns).

Every wait has a generous limit that only guards against a hang; outcomes are
statuses and answers, never timings.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from ray.exceptions import ActorDiedError
from ray.serve.exceptions import BackPressureError

from serving.batching.launch import make_op
from serving.batching.pipeline import Pipeline
from serving.config.documents import ConfigDocument, parse_documents
from serving.config.schema import ServingConfig
from serving.errors import BadRequest, ServingError
from serving.rayserve.deployments import op_deployment_name
from serving.rayserve.remote_stage import LoopThread, RemoteStage, Send
from serving.rayserve.wire import OpCall, OpReply
from tests.support.ray_fakes import HANG_GUARD_S, FakeCluster, document, four_times, op_conf, split_add


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("test-op-calls").start()
    yield thread
    thread.stop()


@pytest.fixture(autouse=True)
def own_cpu_claims(tmp_path, monkeypatch):
    """Replicas record node-wide CPU claims: in a file of the test's own."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def config_of(doc: ConfigDocument) -> ServingConfig:
    return parse_documents([doc]).pipelines[0]


def remote_pipeline(config: ServingConfig, loop: LoopThread, sends: dict[str, Send]) -> Pipeline:
    """``config`` with every op a RemoteStage (as the ingress's ``stage_source`` builds them), started."""
    stages = {
        op.name: RemoteStage(
            op_deployment_name(config, op),
            make_op(op, op.share_name),
            sends[op.name],
            loop,
            input_ops=op.input_ops,
            retry=op.retry,
        )
        for op in config.ops
    }
    pipeline = Pipeline(config, shared=stages)
    pipeline.start(warmup=False)
    return pipeline


def outcome(pipeline: Pipeline, value, **submit) -> tuple[int, object]:
    """(200, answer) or (status, error) of one request."""
    handle = pipeline.submit(value, **submit)
    try:
        return 200, handle.result(timeout=HANG_GUARD_S)
    except ServingError as err:
        return err.status, err


def test_a_request_runs_through_two_op_deployments(loop):
    doc = document("p", split_add())
    with FakeCluster([doc]) as cluster:
        handles = cluster.handles
        pipeline = remote_pipeline(
            config_of(doc), loop, {"split": handles["p-split"].invoke, "add": handles["p-add"].invoke}
        )
        try:
            assert outcome(pipeline, "7 3", priority=0, logid="abc") == (200, four_times(7, 3))
            assert outcome(pipeline, "8 0") == (200, four_times(8, 0))  # no items: passes through
        finally:
            pipeline.shutdown()
    (first, _) = handles["p-split"].calls
    assert first.inputs == {"input": "7 3"} and first.logid == "abc"
    assert 0 < first.timeout_s <= 30.0  # the time left before the request's deadline
    assert handles["p-add"].calls[0].inputs == {"split": {"id": 7, "values": [1400.0, 1402.0, 1404.0]}}


def test_a_fan_in_op_is_called_once_per_request_with_both_inputs(loop):
    ops = {
        "split": op_conf("TextSplitOp"),
        "a": op_conf("AddOp", ["split"]),
        "b": op_conf("AddOp", ["split"]),
        "join": op_conf("JoinOp", ["a", "b"]),
    }
    doc = document("fan", ops)
    with FakeCluster([doc]) as cluster:
        sends = {op: cluster.handles[f"fan-{op}"].invoke for op in ops}
        pipeline = remote_pipeline(config_of(doc), loop, sends)
        try:
            status, answer = outcome(pipeline, "3 2")
        finally:
            pipeline.shutdown()
    assert status == 200
    assert answer == {"id": 3, "total": 2 * 2 * (1200 + 1204), "parts": {"a": [1200, 1204], "b": [1200, 1204]}}
    (call,) = cluster.handles["fan-join"].calls
    assert call.inputs == {"a": {"id": 3, "values": [1200, 1204]}, "b": {"id": 3, "values": [1200, 1204]}}


# ----------------------------------------------------------------------------- failures of the call


ECHO = document("echo", {"echo": op_conf("EchoTextOp")})


def replying(reply: Callable[[OpCall, int], OpReply]) -> tuple[Send, list[OpCall]]:
    """A ``send`` answering ``reply(call, attempt)`` (which may raise); records its calls."""
    calls: list[OpCall] = []

    async def send(call: OpCall) -> OpReply:
        calls.append(call)
        return reply(call, len(calls))

    return send, calls


def echo_outcome(loop: LoopThread, send: Send, value="abc", **submit) -> tuple[int, object]:
    pipeline = remote_pipeline(config_of(ECHO), loop, {"echo": send})
    try:
        return outcome(pipeline, value, **submit)
    finally:
        pipeline.shutdown(timeout=HANG_GUARD_S)


def answer_after_lost_replicas(lost: int) -> Callable[[OpCall, int], OpReply]:
    def reply(call: OpCall, attempt: int) -> OpReply:
        if attempt <= lost:
            raise ActorDiedError()
        return OpReply(output={"text": call.inputs["input"], "double_len": 6})

    return reply


def test_a_call_whose_replica_died_is_sent_again(loop):
    send, calls = replying(answer_after_lost_replicas(1))
    assert echo_outcome(loop, send) == (200, {"text": "abc", "double_len": 6})
    assert len(calls) == 2


def test_a_replica_lost_on_every_try_fails_with_503_and_retry_after(loop):
    send, calls = replying(answer_after_lost_replicas(99))
    status, err = echo_outcome(loop, send)
    assert status == 503
    assert err.retry_after is not None and err.retry_after > 0
    assert "replica was lost" in err.message and "ActorDiedError" in err.message
    assert len(calls) == 2  # the op's retry: 1 (default)


def test_backpressure_from_ray_is_503_without_retry(loop):
    def refuse(call: OpCall, attempt: int) -> OpReply:
        raise BackPressureError(num_queued_requests=4, max_queued_requests=4)

    send, calls = replying(refuse)
    status, err = echo_outcome(loop, send)
    assert status == 503 and err.retry_after is not None and "at capacity" in err.message
    assert len(calls) == 1


def test_an_unexpected_failure_of_the_call_is_500_without_details(loop):
    def broken(call: OpCall, attempt: int) -> OpReply:
        raise ValueError("secret internals")

    send, calls = replying(broken)
    status, err = echo_outcome(loop, send)
    assert status == 500 and "ValueError" in err.message and "secret" not in err.message
    assert len(calls) == 1


def test_an_error_reply_keeps_its_status_and_message(loop):
    send, _ = replying(lambda call, attempt: OpReply.failed(BadRequest("text 'x' rejected")))
    status, err = echo_outcome(loop, send)
    assert status == 400 and err.message == "text 'x' rejected"


def test_a_call_that_never_returns_fails_at_the_deadline_and_is_cancelled(loop):
    cancelled = threading.Event()

    async def hangs(call: OpCall) -> OpReply:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    status, err = echo_outcome(loop, hangs, timeout_ms=1000)
    assert status == 504
    assert cancelled.wait(HANG_GUARD_S), "the pending call was never cancelled"


def test_a_request_that_ends_first_cancels_its_call(loop):
    """A request failed from outside (e.g. the client went away) stops waiting for its op."""
    started, cancelled = threading.Event(), threading.Event()

    async def hangs(call: OpCall) -> OpReply:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    pipeline = remote_pipeline(config_of(ECHO), loop, {"echo": hangs})
    try:
        handle = pipeline.submit("abc")
        assert started.wait(HANG_GUARD_S)
        handle.fail(BadRequest("client gone"))
        assert cancelled.wait(HANG_GUARD_S), "the pending call was never cancelled"
    finally:
        pipeline.shutdown(timeout=HANG_GUARD_S)
