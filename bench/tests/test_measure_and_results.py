"""bench.lib.measure and bench.lib.results helpers that need no model and no server."""

import json
import os

from bench.lib.measure import rss_kb, time_loop
from bench.lib.results import verdict, write_result


def test_rss_kb_reads_this_process():
    assert rss_kb(os.getpid()) > 1000


def test_time_loop_counts_items_and_calls():
    res = time_loop(lambda i: 2, duration_s=0.0, min_calls=5)
    assert res["calls"] == 5 and res["items"] == 10 and res["items_per_s"] > 0


def test_write_result_adds_machine_info_and_drops_nan(tmp_path):
    path = write_result("x", {"ratio": float("nan"), "nested": {"a": [1.5, float("inf")]}}, results_dir=str(tmp_path))
    assert path == os.path.join(str(tmp_path), "x.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["bench"] == "x" and doc["ratio"] is None and doc["nested"]["a"] == [1.5, None]
    assert doc["machine"]["nproc"] == os.cpu_count()


def test_verdict():
    assert verdict(0.95, 0.9) == "MET"
    assert verdict(0.85, 0.9) == "MISSED"
    assert verdict(1.5, 2.0, higher_is_better=False) == "MET"
    assert verdict(2.5, 2.0, higher_is_better=False) == "MISSED"
