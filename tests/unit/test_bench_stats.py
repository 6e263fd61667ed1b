"""Unit tests for client.stats and client.loadgen (no server, no network)."""

import math
import random
import statistics
import threading
import time

import numpy as np
import pytest

from client.loadgen import LevelResult, poisson_arrivals, run_closed_loop, run_open_loop
from client.pipeline_client import PipelineError
from client.stats import (
    ErrorCounts,
    MetricsSnapshot,
    format_errors,
    latency_summary,
    op_stats,
    parse_prometheus,
    percentile,
)

# ----------------------------------------------------------------------------- percentiles


def test_percentile_exact_on_known_data():
    data = list(range(1, 11))  # 1..10
    assert percentile(data, 0) == 1
    assert percentile(data, 100) == 10
    assert percentile(data, 50) == pytest.approx(5.5)
    assert percentile(data, 90) == pytest.approx(9.1)
    assert percentile(data, 99) == pytest.approx(9.91)
    assert percentile(list(reversed(data)), 50) == pytest.approx(5.5)  # order does not matter
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_percentile_matches_numpy_linear():
    rng = random.Random(3)
    data = [rng.expovariate(1.0) for _ in range(997)]
    for q in (1, 25, 50, 90, 99, 99.9):
        assert percentile(data, q) == pytest.approx(float(np.percentile(data, q)))


def test_percentile_rejects_out_of_range():
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def test_latency_summary_in_ms():
    s = latency_summary([0.001 * i for i in range(1, 101)])  # 1..100 ms
    assert s["p50"] == pytest.approx(50.5)
    assert s["p90"] == pytest.approx(90.1)
    assert s["p99"] == pytest.approx(99.01)
    assert s["mean"] == pytest.approx(50.5)
    assert s["max"] == pytest.approx(100.0)
    assert math.isnan(latency_summary([])["p99"])


# ----------------------------------------------------------------------------- errors


def test_error_counts_by_status_thread_safe():
    errors = ErrorCounts()

    def work():
        for i in range(1000):
            errors.add(503 if i % 2 else 400)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors.add(0, 3)
    assert errors.total == 4003
    assert errors[503] == 2000 and errors[400] == 2000 and errors[0] == 3 and errors[500] == 0
    assert errors.as_dict() == {"0": 3, "400": 2000, "503": 2000}
    assert format_errors(errors.as_dict(), dropped=2) == "0(conn):3 400:2000 503:2000 drop:2"
    assert format_errors({}) == "-"


# ----------------------------------------------------------------------------- prometheus

BEFORE = """\
# HELP batchline_op_batch_size batch size
# TYPE batchline_op_batch_size histogram
batchline_op_batch_size_bucket{op="det",le="+Inf"} 10
batchline_op_batch_size_sum{op="det"} 20
batchline_op_batch_size_count{op="det"} 10
batchline_op_batch_size_sum{op="rec"} 100
batchline_op_batch_size_count{op="rec"} 10
batchline_op_queue_wait_seconds_sum{op="det"} 0.5
batchline_op_queue_wait_seconds_count{op="det"} 10
batchline_op_run_seconds_sum{op="det"} 1.0
batchline_op_run_seconds_count{op="det"} 10
batchline_op_real_units_total{op="rec"} 800
batchline_op_padded_units_total{op="rec"} 1000
batchline_op_items_total{op="rec"} 100
batchline_requests_total{pipeline="ocr",status="200"} 10
batchline_requests_total{pipeline="ocr",status="503"} 2
"""

AFTER = """\
batchline_op_batch_size_sum{op="det"} 50 1700000000000
batchline_op_batch_size_count{op="det"} 20
batchline_op_batch_size_sum{op="rec"} 100
batchline_op_batch_size_count{op="rec"} 10
batchline_op_queue_wait_seconds_sum{op="det"} 0.55
batchline_op_queue_wait_seconds_count{op="det"} 20
batchline_op_run_seconds_sum{op="det"} 3.0
batchline_op_run_seconds_count{op="det"} 20
batchline_op_real_units_total{op="rec"} 1700
batchline_op_padded_units_total{op="rec"} 2000
batchline_op_items_total{op="rec"} 190
batchline_requests_total{pipeline="ocr",status="200"} 30
batchline_requests_total{pipeline="ocr",status="503"} 7
"""


def test_parse_prometheus_text():
    text = (
        "# a comment\n\n"
        "m_total 3\n"
        'h_bucket{le="+Inf",op="a b"} +Inf\n'
        'lab{msg="say \\"hi\\"\\nthere",x="1",} 2.5e-3 1700000000\n'
        "neg -Inf\n"
        "nan NaN\n"
    )
    s = parse_prometheus(text)
    assert s[("m_total", ())] == 3
    assert s[("h_bucket", (("le", "+Inf"), ("op", "a b")))] == math.inf
    assert s[("lab", (("msg", 'say "hi"\nthere'), ("x", "1")))] == pytest.approx(0.0025)
    assert s[("neg", ())] == -math.inf
    assert math.isnan(s[("nan", ())])


def test_parse_prometheus_rejects_garbage():
    with pytest.raises(ValueError, match="line 2"):
        parse_prometheus("ok 1\nthis is not a sample\n")


def test_snapshot_value_sums_matching_labels_and_diffs():
    before, after = MetricsSnapshot.from_text(BEFORE), MetricsSnapshot.from_text(AFTER)
    assert before.value("batchline_requests_total", pipeline="ocr") == 12
    assert before.value("batchline_requests_total", status="503") == 2
    assert before.value("missing_metric") == 0
    assert after.delta(before, "batchline_requests_total", pipeline="ocr") == 25
    assert after.label_values("batchline_op_batch_size_count", "op") == ["det", "rec"]


def test_op_stats_histogram_mean_and_padding_ratio():
    stats = op_stats(MetricsSnapshot.from_text(BEFORE), MetricsSnapshot.from_text(AFTER))
    det, rec = stats["det"], stats["rec"]
    assert det["batches"] == 10
    assert det["mean_batch_size"] == pytest.approx(3.0)  # (50-20)/(20-10)
    assert det["mean_queue_wait_ms"] == pytest.approx(5.0)  # 0.05 s / 10
    assert det["mean_run_ms"] == pytest.approx(200.0)  # 2.0 s / 10
    assert det["padding_ratio"] is None  # no padding counters for det
    assert rec["mean_batch_size"] is None  # no batches during the interval
    assert rec["items"] == 90
    assert rec["padding_ratio"] == pytest.approx(0.1)  # 1 - 900/1000


def test_op_stats_counts_predictor_calls_and_calls_shared_by_requests():
    """On the server's own metrics: dispatches, calls, and calls that held items of several requests."""
    from serving.batching.metrics import Metrics

    m = Metrics()
    before = MetricsSnapshot.from_text(m.render().decode())
    m.batch_size.labels("ocr", "1", "rec").observe(8)  # one dispatch of 8 items ...
    for rows, requests in ((4, 1), (3, 2), (1, 1)):  # ... run as three calls (shape groups)
        m.call_rows.labels("ocr", "1", "rec").observe(rows)
        m.call_requests.labels("ocr", "1", "rec").observe(requests)
    stats = op_stats(before, MetricsSnapshot.from_text(m.render().decode()))["rec"]
    assert (stats["batches"], stats["mean_batch_size"]) == (1, 8)
    assert (stats["calls"], stats["shared_calls"]) == (3, 1)
    assert stats["mean_call_rows"] == pytest.approx(8 / 3)


def test_op_stats_from_empty_before_snapshot():
    stats = op_stats(MetricsSnapshot.empty(), MetricsSnapshot.from_text(BEFORE))
    assert stats["det"]["mean_batch_size"] == pytest.approx(2.0)
    assert stats["rec"]["padding_ratio"] == pytest.approx(0.2)


# ----------------------------------------------------------------------------- poisson schedule


def test_poisson_arrivals_statistics_with_seed():
    rate, duration = 200.0, 50.0
    a = poisson_arrivals(rate, duration, seed=7)
    assert a == poisson_arrivals(rate, duration, seed=7)  # reproducible
    assert a != poisson_arrivals(rate, duration, seed=8)
    assert all(0 < x < duration for x in a)
    assert all(x < y for x, y in zip(a, a[1:]))  # increasing
    expected = rate * duration  # 10000, sd = 100
    assert abs(len(a) - expected) < 4 * math.sqrt(expected)
    gaps = [y - x for x, y in zip([0.0] + a, a)]
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(1 / rate, rel=0.05)
    assert statistics.pstdev(gaps) / mean == pytest.approx(1.0, abs=0.05)  # exponential: CV = 1
    # counts per 1 s window: Poisson, variance ~= mean
    counts = [0] * int(duration)
    for x in a:
        counts[int(x)] += 1
    assert statistics.pvariance(counts) / statistics.fmean(counts) == pytest.approx(1.0, abs=0.5)


def test_poisson_arrivals_bounded():
    assert len(poisson_arrivals(1000.0, 10.0, seed=1, max_count=25)) == 25
    with pytest.raises(ValueError):
        poisson_arrivals(0, 1.0)


# ----------------------------------------------------------------------------- load generators


class _Fake:
    """make_request stand-in: every ``fail_every``-th call raises a 503."""

    def __init__(self, fail_every=0, sleep_s=0.0):
        self.fail_every, self.sleep_s = fail_every, sleep_s
        self.calls, self.lock = 0, threading.Lock()
        self.closed = 0

    def factory(self):
        return self

    def close(self):
        with self.lock:
            self.closed += 1

    def __call__(self, client, i):
        with self.lock:
            self.calls += 1
            n = self.calls
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.fail_every and n % self.fail_every == 0:
            raise PipelineError(503, "busy", retry_after=1)


def test_closed_loop_exact_counts_with_max_requests():
    fake = _Fake(fail_every=5)
    res = run_closed_loop(fake.factory, fake, concurrency=4, duration_s=30, max_requests=50)
    assert isinstance(res, LevelResult)
    assert res.requests == 50 and fake.calls == 50
    assert res.ok == 40 and res.errors == {"503": 10}
    assert len(res.latencies_s) == 40
    assert fake.closed == 4  # one client per thread, closed
    d = res.to_dict()
    assert d["requests"] == 50 and d["errors"] == {"503": 10} and d["concurrency"] == 4
    assert set(d["latency_ms"]) >= {"p50", "p90", "p99"}
    assert res.qps > 0


def test_closed_loop_warmup_not_counted_and_duration_bounded():
    fake = _Fake(sleep_s=0.01)
    t0 = time.monotonic()
    res = run_closed_loop(fake.factory, fake, concurrency=2, duration_s=0.3, warmup_s=0.3)
    assert time.monotonic() - t0 < 5
    assert 0 < res.requests < fake.calls  # warm-up calls excluded
    assert res.errors == {}


class _SerialServer:
    """``clients`` clients of a server that answers one request at a time,
    ``service_s`` each, first come first served, on fake clocks (one per client
    thread; a request starts when that client's previous answer arrived). They
    all send at 0, so the k-th client's first answer takes (k + 1) x service_s
    and every later one clients x service_s: the steady state, where the server
    answers exactly 1 / service_s requests a second."""

    def __init__(self, service_s, clients):
        self.service_s, self.clients, self.joined = service_s, clients, 0
        self._lock, self._mine = threading.Lock(), threading.local()

    def clock(self):
        return getattr(self._mine, "now", 0.0)

    def __call__(self, client, i):
        if not hasattr(self._mine, "now"):
            with self._lock:
                self.joined += 1
                self._mine.now = self.joined * self.service_s
            return
        self._mine.now += self.clients * self.service_s


def test_closed_loop_qps_is_the_steady_rate_not_diluted_by_latency():
    # 8 clients queue on a 20/s server, so requests wait for each other;
    # dividing the requests started in the window by the time until the last
    # of them finished would add that wait to the window and report less
    server = _SerialServer(service_s=0.05, clients=8)
    res = run_closed_loop(lambda: None, server, concurrency=8, duration_s=2.0, warmup_s=1.0, clock=server.clock)
    assert res.latency_ms["p50"] == pytest.approx(400)
    assert res.duration_s == 2.0
    assert res.qps == pytest.approx(20.0, abs=0.5)
    assert res.to_dict()["window_ok"] == res.window_ok


def test_closed_loop_other_exceptions_count_as_status_0():
    def boom(client, i):
        raise RuntimeError("bug")

    res = run_closed_loop(lambda: object(), boom, concurrency=2, duration_s=30, max_requests=6)
    assert res.ok == 0 and res.errors == {"0": 6}


def test_open_loop_accounts_every_arrival():
    rate, duration, seed = 400.0, 0.5, 11
    fake = _Fake(fail_every=4, sleep_s=0.02)
    res = run_open_loop(fake.factory, fake, rate=rate, duration_s=duration, max_in_flight=2, seed=seed)
    arrivals = len(poisson_arrivals(rate, duration, seed))
    assert res.mode == "open" and res.rate == rate
    assert res.ok + res.failed + res.dropped == arrivals  # nothing lost, nothing queued
    assert res.dropped > 0  # 2 workers cannot keep up
    assert fake.calls == res.ok + res.failed
    assert res.errors.get("503", 0) == fake.calls // 4
    assert fake.closed == 2


def test_open_loop_max_requests_and_warmup():
    fake = _Fake()
    res = run_open_loop(
        fake.factory, fake, rate=500.0, duration_s=2.0, warmup_s=0.1, max_requests=20, max_in_flight=64, seed=1
    )
    warm = sum(1 for t in poisson_arrivals(500.0, 2.1, 1) if t < 0.1)
    assert res.ok + res.dropped == 20
    assert fake.calls == warm + res.ok
