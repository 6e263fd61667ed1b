"""The engine end to end with fake ops: DAG wiring, fan-out/fan-in, per-request
errors, retries, deadlines, admission, draining, worker replacement."""

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.errors import BadRequest, DeadlineExceeded, InternalError, Overloaded, ShuttingDown

FAKES = "tests.support.engine_fakes"


def op(cls, inputs=(), params=None, **svc):
    conf = {"max_batch_size": 8, "max_queue_delay": 2, "concurrency": 2, "instance_num": 1}
    conf.update(svc)
    return {"class": f"{FAKES}:{cls}", "input_ops": list(inputs), "params": params or {}, "local_service_conf": conf}


def make(ops, **dag):
    dag_conf = {"request_timeout_ms": 20000, "max_queue_size": 512, "channel_size": 8}
    dag_conf.update(dag)
    p = Pipeline(parse_config({"name": "fake", "dag": dag_conf, "op": ops}))
    p.start()
    return p


@pytest.fixture
def pipelines():
    started = []
    yield started.append
    for p in started:
        p.shutdown(timeout=10)


def expected_chain(rid, n, factor):
    return [(rid * 100 + j) * factor for j in range(n)]


def test_linear_fan_out_many_submitters_get_their_own_results(pipelines):
    p = make(
        {
            "split": op("SplitOp", params={"delay_ms": 1}),
            "add": op("AddOp", ["split"], max_batch_size=16, instance_num=2, params={"delay_ms": 1}),
        }
    )
    pipelines(p)
    rng = random.Random(0)
    sizes = {rid: rng.randint(0, 20) for rid in range(1, 201)}  # 20 > max_batch_size: split across batches

    def one(rid):
        return rid, p.submit({"id": rid, "n": sizes[rid]}).result()

    with ThreadPoolExecutor(32) as pool:
        results = dict(pool.map(one, sizes))
    for rid, n in sizes.items():
        assert results[rid] == {"id": rid, "values": expected_chain(rid, n, 4)}
    add_batches = [s for r in p.stages["add"].op.runners for s in r.batch_sizes]
    assert max(add_batches) > 1, "items of different requests were never batched together"
    assert max(add_batches) <= 16


def test_fan_out_and_fan_in(pipelines):
    p = make(
        {
            "split": op("SplitOp"),
            "a": op("AddOp", ["split"]),
            "b": op("AddOp", ["split"]),
            "join": op("JoinOp", ["a", "b"]),
        }
    )
    pipelines(p)
    assert p.dag.order[0] == "split" and p.dag.order[-1] == "join"

    def one(rid):
        return p.submit({"id": rid, "n": 3}).result()

    with ThreadPoolExecutor(16) as pool:
        outs = list(pool.map(one, range(1, 65)))
    for rid, out in zip(range(1, 65), outs):
        part = expected_chain(rid, 3, 4)
        assert out["parts"] == {"a": part, "b": part}
        assert out["total"] == pytest.approx(2 * 2 * sum(part))


def test_several_sinks_answer_a_dict(pipelines):
    p = make({"split": op("SplitOp"), "a": op("AddOp", ["split"]), "b": op("AddOp", ["split"])})
    pipelines(p)
    out = p.submit({"id": 5, "n": 2}).result()
    assert out == {"a": {"id": 5, "values": expected_chain(5, 2, 4)}, "b": {"id": 5, "values": expected_chain(5, 2, 4)}}


def test_zero_items_skip_inference(pipelines):
    p = make({"split": op("SplitOp"), "add": op("AddOp", ["split"])})
    pipelines(p)
    runners = p.stages["add"].op.runners
    warm = [len(r.batch_sizes) for r in runners]
    assert p.submit({"id": 1, "n": 0}).result() == {"id": 1, "values": []}
    assert [len(r.batch_sizes) for r in runners] == warm  # no inference ran


def concurrent_results(p, values):
    def one(v):
        try:
            return p.submit(v).result()
        except Exception as exc:  # noqa: BLE001
            return exc

    with ThreadPoolExecutor(len(values)) as pool:
        return list(pool.map(one, values))


def test_bad_item_fails_only_its_request(pipelines):
    # request 3's second item (value 301) fails preprocessing
    p = make({"split": op("SplitOp", params={"bad_preprocess": 301, "delay_ms": 20})})
    pipelines(p)
    outs = concurrent_results(p, [{"id": r, "n": 2} for r in range(1, 17)])
    for rid, out in zip(range(1, 17), outs):
        if rid == 3:
            assert isinstance(out, BadRequest) and "301" in out.message
        else:
            assert out == {"id": rid, "values": expected_chain(rid, 2, 2)}


def test_failed_batch_retried_item_by_item(pipelines):
    # the predictor raises for any batch that holds value 500 (request 5)
    p = make({"split": op("SplitOp", params={"fail_value": 500, "delay_ms": 20}, max_batch_size=16)})
    pipelines(p)
    outs = concurrent_results(p, [{"id": r, "n": 1} for r in range(1, 17)])
    for rid, out in zip(range(1, 17), outs):
        if rid == 5:
            assert isinstance(out, InternalError) and "injected" in out.message
        else:
            assert out == {"id": rid, "values": [rid * 100 * 2]}
    runner = p.stages["split"].op.runners[0]
    assert 1 in runner.batch_sizes[5:] and max(runner.batch_sizes[5:]) > 1
    assert p.metrics.op_errors.labels("fake", "1", "split", "500")._value.get() == 1


def test_retry_zero_fails_the_batch(pipelines):
    p = make({"split": op("SplitOp", params={"fail_value": 100})})
    p.config.op["split"].retry = 0
    p.stages["split"].retry = 0
    pipelines(p)
    with pytest.raises(InternalError):
        p.submit({"id": 1, "n": 1}).result()


def test_deadline_expired_items_never_reach_predictor(pipelines):
    p = make({"split": op("SplitOp", params={"delay_ms": 300}, max_batch_size=1)})
    pipelines(p)
    runner = p.stages["split"].op.runners[0]
    warm = len(runner.batch_sizes)
    first = p.submit({"id": 1, "n": 1})
    late = p.submit({"id": 2, "n": 1}, timeout_ms=50)
    with pytest.raises(DeadlineExceeded):
        late.result()
    assert first.result() == {"id": 1, "values": [200]}
    p.shutdown(timeout=10)
    assert len(runner.batch_sizes) == warm + 1  # request 1 ran; request 2 never reached the predictor


def test_timeout_ms_cannot_extend_the_server_limit(pipelines):
    p = make({"split": op("SplitOp")}, request_timeout_ms=1000)
    pipelines(p)
    handle = p.submit({"id": 1, "n": 1}, timeout_ms=10**9)
    assert handle.deadline - handle.created <= 1.0 + 1e-6


def test_admission_limit_is_fast_503(pipelines):
    p = make({"split": op("SplitOp", params={"delay_ms": 200}, max_batch_size=1)}, max_queue_size=2)
    pipelines(p)
    a = p.submit({"id": 1, "n": 1})
    b = p.submit({"id": 2, "n": 1})
    with pytest.raises(Overloaded) as info:
        p.submit({"id": 3, "n": 1})
    assert info.value.status == 503 and info.value.retry_after
    assert a.result()["id"] == 1 and b.result()["id"] == 2
    assert p.submit({"id": 4, "n": 1}).result()["id"] == 4


def test_shutdown_drains_accepted_requests():
    p = make(
        {
            "split": op("SplitOp", params={"delay_ms": 30}, max_batch_size=2),
            "add": op("AddOp", ["split"], params={"delay_ms": 30}, max_batch_size=2),
        }
    )
    handles = [p.submit({"id": r, "n": 2}) for r in range(1, 11)]
    assert p.shutdown(timeout=30) is True
    for rid, h in enumerate(handles, 1):
        assert h.result(timeout=0) == {"id": rid, "values": expected_chain(rid, 2, 4)}
    with pytest.raises(ShuttingDown):
        p.submit({"id": 99, "n": 1})


def test_dead_worker_thread_is_replaced(pipelines, caplog):
    # a downstream op: an idle source op takes a request in on the submitting thread, not from its channel
    p = make({"split": op("SplitOp"), "add": op("AddOp", ["split"], concurrency=1)})
    pipelines(p)
    stage = p.stages["add"]
    original = stage.channel.get
    calls = {"n": 0}

    def flaky_get():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom in the engine")
        return original()

    stage.channel.get = flaky_get
    # the intake thread may already wait inside the original get(): then request 1
    # passes through it and the failure hits its next get(); either way both succeed
    with caplog.at_level(logging.ERROR):
        assert p.submit({"id": 1, "n": 2}).result(timeout=10) == {"id": 1, "values": expected_chain(1, 2, 4)}
        assert p.submit({"id": 2, "n": 1}).result(timeout=10) == {"id": 2, "values": expected_chain(2, 1, 4)}
        for _ in range(500):
            if stage._threads.replaced:
                break
            threading.Event().wait(0.01)
    assert stage._threads.replaced == 1
    assert "replacement" in caplog.text


def test_profile_and_tracer_lines(caplog):
    p = make({"split": op("SplitOp")}, use_profile=True)
    with caplog.at_level(logging.INFO, logger="serving.batching.pipeline"):
        p.submit({"id": 1, "n": 3}, logid=42).result()
        p.shutdown(timeout=5)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("profile"))
    assert "logid=42" in line and "split[wait=" in line and "batch=" in line
    lines = p._tracer.lines()
    assert lines[1].startswith("tracer op=split") and "mean_batch=" in lines[1]


def test_priority_is_served_first_under_contention(pipelines):
    p = make({"split": op("SplitOp", params={"delay_ms": 50}, max_batch_size=1, max_queue_delay=0)}, priority_levels=2)
    pipelines(p)
    runner = p.stages["split"].op.runners[0]
    warm_runs = len(runner.batch_sizes)
    order = []
    lock = threading.Lock()

    def record(req):
        with lock:
            order.append(req.value["id"])

    blocker = p.submit({"id": 1, "n": 1})
    blocker.add_done_callback(record)
    while len(runner.batch_sizes) == warm_runs:  # the blocker occupies the only instance
        threading.Event().wait(0.001)
    handles = [p.submit({"id": r, "n": 1}, priority=1 if r >= 6 else 0) for r in range(2, 10)]
    for h in handles:
        h.add_done_callback(record)
    for h in handles:
        h.result()
    assert order == [1, 6, 7, 8, 9, 2, 3, 4, 5]


def test_timing_counts_each_batch_once(pipelines):
    p = make({"split": op("SplitOp", max_batch_size=8, max_queue_delay=50, batching_policy="fixed")})
    pipelines(p)
    handle = p.submit({"id": 1, "n": 3})
    handle.result()
    summary = handle.timing_summary()["ops"]["split"]
    assert summary["batch_sizes"] == [3]
    assert summary["run_ms"] <= handle.timing_summary()["total_ms"]


def test_predictor_calls_use_run_batch_sizes(pipelines):
    p = make({"split": op("SplitOp", max_batch_size=16, max_queue_delay=1000, batching_policy="fixed")})
    pipelines(p)
    runner = p.stages["split"].op.runners[0]
    warm = len(runner.batch_sizes)
    assert p.submit({"id": 1, "n": 13}).result() == {"id": 1, "values": expected_chain(1, 13, 2)}
    assert runner.batch_sizes[warm:] == [8, 4, 1]  # 13 items -> calls of 8 + 4 + 1 (powers of two)


def test_run_batch_sizes_empty_means_any_size(pipelines):
    p = make(
        {"split": op("SplitOp", max_batch_size=16, max_queue_delay=1000, batching_policy="fixed", run_batch_sizes=[])}
    )
    pipelines(p)
    runner = p.stages["split"].op.runners[0]
    warm = len(runner.batch_sizes)
    p.submit({"id": 1, "n": 13}).result()
    assert runner.batch_sizes[warm:] == [13]


def test_max_batch_units_splits_a_request_into_batches_within_the_budget(pipelines):
    p = make(
        {
            "split": op(
                "SizedSplitOp", max_batch_size=8, max_batch_units=10, max_queue_delay=1000, batching_policy="fixed"
            )
        }
    )
    pipelines(p)
    runner = p.stages["split"].op.runners[0]
    warm = len(runner.batch_sizes)
    assert p.submit({"id": 1, "n": 6, "units": 4}).result() == {"id": 1, "values": expected_chain(1, 6, 2)}
    # 3 x 4 units would pad to 12 > 10: batches of two, each full, none waiting for the 1 s delay
    assert runner.batch_sizes[warm:] == [2, 2, 2]
    assert p.submit({"id": 2, "n": 1, "units": 50}).result() == {"id": 2, "values": [400]}  # over the budget: alone


@pytest.mark.parametrize("budget, largest", [(None, 8), (10, 2)])
def test_warm_up_batches_stay_within_the_budget(pipelines, budget, largest):
    p = make({"split": op("SizedSplitOp", max_batch_size=8, max_batch_units=budget)})
    pipelines(p)
    warm = p.stages["split"].op.runners[0].batch_sizes
    assert max(warm) == largest  # the warm-up item has 4 units: 10 holds two


def test_split_sizes():
    from serving.batching.execute import split_sizes

    assert split_sizes(13, [1, 2, 4, 8, 16, 32]) == [8, 4, 1]
    assert split_sizes(32, [1, 2, 4, 8, 16, 32]) == [32]
    assert split_sizes(7, [1, 4]) == [4, 1, 1, 1]


# ---------------------------------------------------------------------------
# the engine holds ops to one result per item (regression: a short list was truncated by zip)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fault, message",
    [
        ("short_uncollate", "op 'faulty': uncollate() returned 2 results for a predictor call of 3 items"),
        ("short_run", "op 'faulty': the predictor returned 2 rows for 3 items"),
        ("collate_drops", "op 'faulty': collate() must place each of the 3 items in exactly one sub-batch"),
        ("collate_twice", "op 'faulty': collate() must place each of the 3 items in exactly one sub-batch"),
    ],
)
def test_a_wrong_result_count_fails_the_batch_with_the_op_and_the_counts(pipelines, caplog, fault, message):
    p = make({"faulty": dict(op("FaultyHooksOp", params={"fault": fault}, run_batch_sizes=[]), retry=0)})
    pipelines(p)
    with caplog.at_level(logging.WARNING, logger="serving.batching.execute"), pytest.raises(InternalError) as info:
        p.submit({"id": 2, "n": 3}).result(timeout=10)
    assert info.value.status == 500
    assert any(message in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert message in info.value.message


def test_a_closed_channel_is_a_503_with_retry_after_not_a_500(pipelines):
    """Regression: ChannelClosed escaped as a plain exception and became a 500."""
    p = make({"split": op("SplitOp"), "add": op("AddOp", ["split"])})
    pipelines(p)
    p.stages["add"].channel.close()  # as during shutdown, while a request is still on its way
    with pytest.raises(ShuttingDown) as info:
        p.submit({"id": 1, "n": 2}).result(timeout=10)
    assert info.value.status == 503 and info.value.retry_after


def test_an_item_reaching_a_closing_stage_is_a_503_with_retry_after(pipelines):
    """Regression: a stage whose batcher was closed failed the request with a plain 500."""
    p = make({"split": op("SplitOp"), "add": op("AddOp", ["split"])})
    pipelines(p)
    p.stages["add"].batcher.close()
    with pytest.raises(ShuttingDown) as info:
        p.submit({"id": 1, "n": 2}).result(timeout=10)
    assert info.value.status == 503 and info.value.retry_after
    assert "shutting down" in info.value.message


def test_a_client_with_its_answer_finds_its_slot_free(pipelines):
    """Regression: waiters woke before the in-flight count dropped, so a client sending its
    next request at once could be refused by a server at max_queue_size."""
    p = make({"split": op("SplitOp")}, max_queue_size=1)
    pipelines(p)
    bookkeeping = p._on_done

    def slow_bookkeeping(request):  # widen the window the race needed
        time.sleep(0.02)
        bookkeeping(request)

    p._on_done = slow_bookkeeping
    for rid in range(10):
        assert p.submit({"id": rid, "n": 1}).result(timeout=10)["id"] == rid
        assert p.in_flight == 0


def test_before_start_it_says_starting_and_after_shutdown_shutting_down():
    p = Pipeline(parse_config({"name": "fake", "op": {"split": op("SplitOp")}}))
    with pytest.raises(Overloaded, match="starting") as info:
        p.submit({"id": 1, "n": 1})
    assert not isinstance(info.value, ShuttingDown) and info.value.retry_after
    p.start()
    assert p.submit({"id": 1, "n": 1}).result(timeout=10)["id"] == 1
    p.shutdown(timeout=5)
    with pytest.raises(ShuttingDown):
        p.submit({"id": 2, "n": 1})


def test_a_source_op_takes_a_request_in_on_the_submitting_thread(pipelines):
    """One thread hand-off less for a lone request: the submitter runs an idle source
    op's expand + preprocess itself; a shadow (background) copy still goes through the channel."""
    p = make({"split": op("SplitOp"), "add": op("AddOp", ["split"])})
    pipelines(p)
    stage = p.stages["split"]
    threads: dict[int, set[str]] = {}
    original = stage.op.preprocess

    def preprocess(payload):
        threads.setdefault(payload[0], set()).add(threading.current_thread().name)
        return original(payload)

    stage.op.preprocess = preprocess
    assert p.submit({"id": 1, "n": 2}).result(timeout=10) == {"id": 1, "values": expected_chain(1, 2, 4)}
    assert p.submit({"id": 2, "n": 1}, background=True).result(timeout=10)["id"] == 2
    assert threads[1] == {threading.current_thread().name}
    assert threading.current_thread().name not in threads[2]


def test_a_source_op_refuses_a_request_while_draining(pipelines):
    p = make({"split": op("SplitOp")})
    pipelines(p)
    p.stages["split"].channel.close()  # as during shutdown
    with pytest.raises(ShuttingDown) as info:
        p.submit({"id": 1, "n": 2}).result(timeout=10)
    assert info.value.status == 503
    # the refused request is not left counted in flight: shutdown drains at once, not at its timeout
    assert p.shutdown(timeout=5) is True


@pytest.mark.parametrize(
    "prepared",
    [
        {"engine": "torch", "device_type": 1, "devices": "0", "cuda_graphs": True},
        {"engine": "torch", "torch_compile": True},
    ],
    ids=["cuda_graphs", "torch_compile"],
)
def test_warm_up_runs_each_shape_twice_where_the_engine_prepares_it_on_the_second(pipelines, prepared):
    """engine: torch with cuda_graphs captures a shape on its second call, and with torch_compile sends it to
    the compiler then: warm-up does it for its shapes."""
    plain = make({"split": op("SizedSplitOp", max_batch_size=4, run_batch_sizes=[1, 2, 4])})
    graphs = make({"split": op("SizedSplitOp", max_batch_size=4, run_batch_sizes=[1, 2, 4], **prepared)})
    pipelines(plain)
    pipelines(graphs)
    once = plain.stages["split"].op.runners[0].batch_sizes
    twice = graphs.stages["split"].op.runners[0].batch_sizes
    seeding = 4  # the cost model's seeds: batch 1 and the largest, each timed twice
    assert len(twice) - seeding == 2 * (len(once) - seeding)
    assert sorted(set(twice)) == sorted(set(once))
