"""Reliability against the real ``batchline serve`` process with a model-free
image op (tests/support/image_fakes.py; the image decoding path is the real one):
a short malformed-input fuzz, faults inside a batch, a dying worker thread,
client disconnects and deadlines, a short overload and a short soak.

The drivers are tests/support/fuzz and tests/support/reliability; the
full-size runs are their CLIs bench/fuzz.py, bench/overload.py and
bench/soak.py (results in docs/RELIABILITY.md).
"""

import base64
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from client.stats import MetricsSnapshot
from tests.support.fuzz.case import Limits
from tests.support.fuzz.runner import run_fuzz
from tests.support.image_fakes import SLOW_S, encode_png, expected_answer, image_config, make_image
from tests.support.server_process import ServerProcess

pytestmark = pytest.mark.slow

NAME = "img"
SERVER = dict(
    name=NAME,
    delay_ms=20,
    per_item_ms=1,
    max_batch_size=16,
    max_queue_delay=5,
    instance_num=1,
    concurrency=2,
    request_timeout_ms=10000,
    max_queue_size=256,
    worker_num=8,
    max_body_size=1 << 20,
    max_image_pixels=4_000_000,
    max_inputs_per_request=8,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("reliability") / "img.yml"
    path.write_text(image_config(**SERVER))
    proc = ServerProcess(str(path), ready_timeout=120)
    yield proc
    proc.stop()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def native(url, img, timeout=30, **options):
    return requests.post(
        f"{url}/{NAME}/predict", json={"inputs": [{"image": b64(encode_png(img))}], **options}, timeout=timeout
    )


def full_log(server) -> str:
    with open(server.log_path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def metric(url, name, **labels) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (0 if none)."""
    return MetricsSnapshot.from_text(requests.get(url + "/metrics", timeout=30).text).value(name, **labels)


def occupy_instance(url):
    """Start a request whose batch holds the only instance for SLOW_S seconds.
    Returns (its future, the op's item count before it)."""
    items_before = metric(url, "batchline_op_items_total", op="stats")
    pool = ThreadPoolExecutor(1)
    future = pool.submit(native, url, make_image(10, 10, seed=99, fault="slow"))
    pool.shutdown(wait=False)
    end = time.monotonic() + 5
    while metric(url, "batchline_requests_in_flight", pipeline=NAME) < 1 and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(0.2)  # max_queue_delay is 5 ms: the slow batch is running now
    return future, items_before


# ---------------------------------------------------------------------------
# malformed input
# ---------------------------------------------------------------------------
def test_short_fuzz_against_the_real_server(server):
    limits = Limits(
        max_body_size=SERVER["max_body_size"],
        max_inputs=SERVER["max_inputs_per_request"],
        max_image_pixels=SERVER["max_image_pixels"],
    )
    report = run_fuzz(server.url, NAME, limits, 200, seed=7, heavy=False, pid=server.proc.pid, deadline_s=120)
    assert report.total == 200
    assert not report.failures, report.failures[:5]
    assert not report.alive_problems, report.alive_problems
    statuses = report.by_status()
    assert not [s for s in statuses if s >= 500 or s == 0], statuses
    assert statuses.get(400, 0) > 100 and statuses.get(413, 0) > 0 and statuses.get(404, 0) > 0


# ---------------------------------------------------------------------------
# faults inside one batch of 16
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fault, message", [("postprocess", "injected postprocess failure"), ("run", "injected predictor failure")]
)
def test_one_bad_item_in_a_batch_of_16_fails_exactly_its_request(server, fault, message):
    images = [make_image(20 + i, 12, seed=i, fault=fault if i == 5 else None) for i in range(16)]
    blocker, _ = occupy_instance(server.url)
    with ThreadPoolExecutor(16) as pool:  # all 16 queue while the instance is busy -> one batch of 16
        responses = list(pool.map(lambda img: native(server.url, img, timing=True), images))
    assert blocker.result().status_code == 200
    for i, (img, r) in enumerate(zip(images, responses)):
        if i == 5:
            assert r.status_code == 500 and message in r.json()["error"]["message"], r.text
        else:
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["results"] == [expected_answer(img)]
            assert body["timing"][0]["ops"]["stats"]["batch_sizes"] == [16], body["timing"]


def test_dead_instance_thread_is_replaced_and_logged(server):
    began = time.monotonic()
    r = native(server.url, make_image(16, 16, fault="kill_instance"))
    assert r.status_code == 500 and "WorkerKilled" in r.json()["error"]["message"], r.text
    assert time.monotonic() - began < 5, "the failed batch waited for its deadline instead of failing at once"
    wanted = "op-stats-instance-0: worker thread died; starting a replacement"
    end = time.monotonic() + 10  # the answer may leave before the dying thread has logged
    while wanted not in full_log(server) and time.monotonic() < end:
        time.sleep(0.05)
    assert wanted in full_log(server), server.log()[-2000:]
    # the only instance thread died: answers now come from its replacement
    images = [make_image(8 + i, 8, seed=i) for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(lambda img: native(server.url, img), images))
    assert [r.status_code for r in responses] == [200] * 12
    assert [r.json()["results"][0] for r in responses] == [expected_answer(i) for i in images]


# ---------------------------------------------------------------------------
# dropped before inference: client gone, deadline passed
# ---------------------------------------------------------------------------
def _raw_request(url: str, body: bytes) -> socket.socket:
    host, port = url.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = (
        f"POST /{NAME}/prediction HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    return sock


def test_client_disconnect_drops_the_request_before_inference(server):
    img = make_image(30, 20, seed=3)
    body = json.dumps({"key": ["image"], "value": [b64(encode_png(img))]}).encode()
    gone_before = metric(server.url, "batchline_requests_total", pipeline=NAME, status="499")
    blocker, items_before = occupy_instance(server.url)
    sock = _raw_request(server.url, body)
    time.sleep(0.2)  # admitted and queued behind the slow batch
    sock.close()  # the client goes away mid-request
    assert blocker.result().status_code == 200
    end = time.monotonic() + 5
    while metric(server.url, "batchline_requests_total", pipeline=NAME, status="499") < gone_before + 1:
        assert time.monotonic() < end, "the disconnect was never noticed"
        time.sleep(0.05)
    time.sleep(0.3)  # give a wrongly kept item the chance to run
    # only the blocker's one item reached the predictor
    assert metric(server.url, "batchline_op_items_total", op="stats") == items_before + 1


def test_expired_deadline_is_504_and_never_reaches_the_predictor(server):
    blocker, items_before = occupy_instance(server.url)
    began = time.monotonic()
    r = native(server.url, make_image(12, 12, seed=4), timeout_ms=150)
    waited = time.monotonic() - began
    assert r.status_code == 504 and r.json()["error"]["status"] == 504, r.text
    assert waited < SLOW_S, f"answered after {waited:.2f}s, not at the 150 ms deadline"
    assert blocker.result().status_code == 200
    time.sleep(0.3)
    assert metric(server.url, "batchline_op_items_total", op="stats") == items_before + 1


# ---------------------------------------------------------------------------
# overload and soak (short runs; the full ones: bench/overload.py and bench/soak.py)
# ---------------------------------------------------------------------------
def test_short_overload_sheds_load_with_fast_503s():
    from tests.support.reliability.overload import run

    summary, problems = run(duration_s=8, capacity_s=3, fake_overrides={"max_queue_size": 64}, log=lambda m: None)
    assert not problems, (problems, summary)
    assert summary["rejected_503"] > 0 and summary["accepted"] > 0, summary
    assert summary["latency_503_ms"]["p50"] < 100, summary["latency_503_ms"]


def test_short_soak_has_no_errors_and_flat_rss():
    from tests.support.reliability.soak import run

    s = run(minutes=25 / 60, rate=35, warmup_s=5, rss_interval_s=1, log=lambda m: None)
    assert s["errors"] == 0 and s["dropped_client_side"] == 0, s["statuses"]
    assert s["requests"] > 500
    assert s["rss_end"] <= s["rss_warm"] * 1.10, s["rss_samples_mb"]


# ---------------------------------------------------------------------------
# engine-level: a request blocked on a full channel must still honour its deadline
# ---------------------------------------------------------------------------
def test_submit_blocked_on_a_full_channel_honours_the_deadline():
    from serving.batching.pipeline import Pipeline
    from serving.config import parse_config
    from serving.errors import DeadlineExceeded

    p = Pipeline(
        parse_config(
            {
                "name": NAME,
                "dag": {"request_timeout_ms": 10000, "max_queue_size": 64, "channel_size": 1},
                "op": {
                    "stats": {
                        "class": "tests.support.image_fakes:ImageStatsOp",
                        "params": {"delay_ms": 1000},
                        "local_service_conf": {"max_batch_size": 1, "concurrency": 1},
                    }
                },
            }
        )
    )
    p.start(warmup=False)
    try:
        img = make_image(8, 8)
        # fill the batcher (capacity 4 * max_batch_size), the channel and the intake thread
        background = [p.submit(img, timeout_ms=10000) for _ in range(7)]
        began = time.monotonic()
        box = {}

        def late():
            try:
                p.submit(img, timeout_ms=200).result()
            except DeadlineExceeded as exc:
                box["error"] = exc
            box["t"] = time.monotonic() - began

        t = threading.Thread(target=late, daemon=True)
        t.start()
        t.join(10)
        assert "error" in box
        assert box["t"] < 0.6, f"a 200 ms deadline was answered after {box['t']:.2f}s"
        assert not any(h.done for h in background)
    finally:
        p.shutdown(timeout=0.5)  # fails the background requests instead of waiting 7 s for them
