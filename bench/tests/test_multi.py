"""bench.lib.multi: repository dirs, client splits, pooled rounds and the
repository metrics (no model, no server: the metrics come from the server's
own Metrics class, rendered and parsed as a scrape would)."""

import os

import pytest
import yaml

from bench.lib.measure import cpu_seconds, cpu_used, rss_kb, tree_cpu_seconds, tree_rss_kb
from bench.lib.multi import (
    call_pipelines,
    fmt_ratio,
    mix_label,
    op_layout,
    parse_env,
    parse_mixes,
    pooled,
    predictor_processes,
    ratio,
    shadow_stats,
    shared_requests,
    split_clients,
    without_share,
    write_repository,
)
from bench.lib.script import BenchError

OCR = {
    "name": "ocr",
    "op": {
        "det": {
            "class": "ocr_det",
            "share": True,
            "local_service_conf": {
                "instance_mode": "process",
                "instance_num": 2,
                "thread_num": 1,
                "use_openvino": True,
            },
        },
        "rec": {
            "class": "ocr_rec",
            "share": "ocr_rec",
            "input_ops": ["det"],
            "local_service_conf": {"instance_mode": "process", "instance_num": 2, "max_batch_size": 8},
        },
    },
}
OCR_ERNIE = {
    **OCR,
    "name": "ocr_ernie",
    "op": {**OCR["op"], "ernie": {"class": "ernie_cls", "local_service_conf": {"thread_num": 2}}},
}


def snapshot(metrics):
    from client.stats import MetricsSnapshot

    return MetricsSnapshot.from_text(metrics.render().decode())


def test_without_share_drops_every_share_key_and_leaves_the_input_alone():
    out = without_share(OCR)
    assert all("share" not in op for op in out["op"].values())
    assert OCR["op"]["det"]["share"] is True
    assert out["op"]["rec"]["local_service_conf"] == OCR["op"]["rec"]["local_service_conf"]


def test_write_repository_writes_one_file_per_config_in_order():
    folder = write_repository([OCR, {**OCR_ERNIE, "version": 2}], tag="test")
    try:
        names = sorted(os.listdir(folder))
        assert names == ["00-ocr-v1.yml", "01-ocr_ernie-v2.yml"]
        with open(os.path.join(folder, names[1]), encoding="utf-8") as f:
            assert yaml.safe_load(f)["op"]["ernie"]["class"] == "ernie_cls"
    finally:
        for n in os.listdir(folder):
            os.remove(os.path.join(folder, n))
        os.rmdir(folder)


def test_split_clients():
    assert split_clients(8, 2) == [4, 4]
    assert split_clients(5, 2) == [3, 2]
    assert split_clients(2, 2) == [1, 1]
    with pytest.raises(BenchError):
        split_clients(1, 2)


def test_pooled_rounds_weigh_by_time_and_pool_latencies():
    rounds = [
        {"ok": 10, "failed": 1, "duration_s": 5.0, "latencies_s": [0.1] * 10},
        {"ok": 30, "failed": 0, "duration_s": 5.0, "latencies_s": [0.3] * 30},
    ]
    out = pooled(rounds)
    assert out["rate"] == pytest.approx(4.0)
    assert out["ok"] == 40 and out["failed"] == 1
    assert out["latency_ms"]["p50"] == pytest.approx(300.0)


def test_ratio_and_its_format():
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(1.0, 0.0) is None and ratio(None, 1.0) is None
    assert fmt_ratio(1.234) == "1.23x" and fmt_ratio(None) == "n/a"


def test_op_layout_and_predictor_processes():
    layout = op_layout(OCR_ERNIE)
    assert layout.startswith("det process 2x1 openvino max_batch 1 (shared), ")
    assert "rec process 2x1 plain max_batch 8 (shared as ocr_rec)" in layout
    assert layout.endswith("ernie thread 1x2 plain max_batch 1")
    # det and rec run once on one server; two servers have a copy each; ernie is a thread
    assert predictor_processes([OCR, OCR_ERNIE], shared=True) == 4
    assert predictor_processes([OCR, OCR_ERNIE], shared=False) == 8
    assert predictor_processes([without_share(OCR), without_share(OCR_ERNIE)], shared=True) == 8


def test_call_pipelines_counts_calls_that_mixed_pipelines():
    from serving.batching.metrics import SHARED, Metrics

    metrics = Metrics()
    before = snapshot(metrics)
    hist = metrics.call_pipelines.labels(SHARED, "", "rec")
    for groups in (1, 1, 2, 1, 2):
        hist.observe(groups)
    metrics.call_pipelines.labels(SHARED, "", "det").observe(1)
    metrics.shared_requests.labels("rec", "ocr", "1").inc(3)
    metrics.shared_requests.labels("rec", "ocr_ernie", "1").inc(2)
    after = snapshot(metrics)
    assert call_pipelines(before, after, "rec") == {"calls": 5, "mixed": 2, "mixed_share": 0.4}
    assert call_pipelines(before, after, "det") == {"calls": 1, "mixed": 0, "mixed_share": 0.0}
    assert shared_requests(before, after, "rec") == {"ocr": 3, "ocr_ernie": 2}


def test_shadow_stats_counts_outcomes_and_reads_the_agreement():
    from serving.batching.metrics import Metrics

    metrics = Metrics()
    metrics.shadow_requests.labels("ocr", "2", "agree").inc(5)
    before = snapshot(metrics)
    assert shadow_stats(before, before, "ocr")["mean_latency_ms"] is None
    metrics.shadow_requests.labels("ocr", "2", "agree").inc(3)
    metrics.shadow_requests.labels("ocr", "2", "disagree").inc(1)
    metrics.shadow_requests.labels("ocr", "2", "dropped").inc(4)
    metrics.shadow_requests.labels("other", "2", "dropped").inc(9)
    metrics.shadow_agreement.labels("ocr", "2").set(0.9)
    for s in (0.1, 0.3):
        metrics.shadow_time.labels("ocr", "2").observe(s)
    out = shadow_stats(before, snapshot(metrics), "ocr")
    assert out["outcomes"] == {"agree": 3, "disagree": 1, "shadow_failed": 0, "primary_failed": 0, "dropped": 4}
    assert out["offered"] == 8
    assert out["agreement"] == pytest.approx(0.9)
    assert out["mean_latency_ms"] == pytest.approx(200.0)


def test_shadow_stats_without_an_agreement_gauge():
    from serving.batching.metrics import Metrics

    snap = snapshot(Metrics())
    assert shadow_stats(snap, snap, "ocr")["agreement"] is None


def test_tree_rss_counts_child_processes():
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", "x = bytearray(80_000_000); import time; time.sleep(30)"])
    try:
        end = time.monotonic() + 20
        while rss_kb(child.pid) < 70_000 and time.monotonic() < end:
            time.sleep(0.05)
        assert tree_rss_kb(os.getpid()) - rss_kb(os.getpid()) >= 70_000
    finally:
        child.kill()
        child.wait()


def test_parse_mixes():
    assert parse_mixes("4+4,7+1", 2) == [(4, 4), (7, 1)]
    assert parse_mixes("8", 2) == [(4, 4)]
    assert parse_mixes("5, 8+0", 2) == [(3, 2), (8, 0)]
    assert mix_label((7, 1)) == "7+1"
    for bad in ("0+0", "1+2+3", "x", "-1+3", "", "1"):
        with pytest.raises(BenchError):
            parse_mixes(bad, 2)


def test_cpu_used_counts_new_processes_from_zero():
    assert cpu_used({1: 2.0, 2: 1.0}, {1: 3.5, 3: 0.5}) == pytest.approx(2.0)
    assert cpu_seconds(os.getpid()) > 0
    assert os.getpid() in tree_cpu_seconds([os.getpid()])


def test_parse_env():
    assert parse_env(["KMP_BLOCKTIME=0", "A=b=c", "E="]) == {"KMP_BLOCKTIME": "0", "A": "b=c", "E": ""}
    for bad in ("X", "=1"):
        with pytest.raises(BenchError):
            parse_env([bad])
