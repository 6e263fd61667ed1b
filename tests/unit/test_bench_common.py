"""bench/common.py helpers that need no model and no server."""

import json
import os

import pytest
import yaml

from bench import common

BASE = {
    "name": "rec",
    "dag": {"channel_size": 64},
    "op": {
        "rec": {
            "class": "ocr_rec",
            "input_ops": [],
            "local_service_conf": {"max_batch_size": 32, "thread_num": 4},
            "params": {"width_buckets": [320, 640]},
        },
        "post": {"class": "x.y:Z", "input_ops": ["rec"]},
    },
}


def test_apply_overrides_sets_op_and_all_op_keys_without_touching_the_input():
    out = common.apply_overrides(
        BASE,
        ops={"rec": {"max_batch_size": 1}},
        all_ops={"thread_num": 2},
        dag={"use_profile": True},
        top={"name": "rec2"},
        params={"rec": {"max_width": 800}},
    )
    rec = out["op"]["rec"]
    assert rec["local_service_conf"] == {"max_batch_size": 1, "thread_num": 2}
    assert out["op"]["post"]["local_service_conf"] == {"thread_num": 2}
    assert rec["params"] == {"width_buckets": [320, 640], "max_width": 800}
    assert out["dag"] == {"channel_size": 64, "use_profile": True}
    assert out["name"] == "rec2"
    # the base config is not modified
    assert BASE["op"]["rec"]["local_service_conf"] == {"max_batch_size": 32, "thread_num": 4}
    assert "local_service_conf" not in BASE["op"]["post"]


def test_apply_overrides_rejects_unknown_op_names():
    with pytest.raises(common.BenchError, match="no op 'recc'"):
        common.apply_overrides(BASE, ops={"recc": {"max_batch_size": 1}})
    with pytest.raises(common.BenchError, match="no op 'x'"):
        common.apply_overrides(BASE, params={"x": {}})


def test_write_config_round_trips_through_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    path = common.write_config(common.apply_overrides(BASE, ops={"rec": {"instance_num": 4}}), tag="t")
    assert path.startswith(str(tmp_path)) and path.endswith(".yml")
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    assert data["op"]["rec"]["local_service_conf"]["instance_num"] == 4
    assert common.pipeline_name(path) == "rec"


def test_derive_config_from_the_repo_rec_config_validates(tmp_path, monkeypatch):
    if not os.path.isfile(os.path.join(common.CONFIG_DIR, "rec.yml")):
        pytest.skip("configs/rec.yml not present")
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    from serving.config import load_config

    path = common.derive_config("rec", ops={"rec": {"max_batch_size": 1, "batching_policy": "fixed"}})
    conf = load_config(path).op["rec"].local_service_conf
    assert conf.max_batch_size == 1 and conf.batching_policy == "fixed"


def test_missing_repo_config_is_a_bench_error():
    with pytest.raises(common.BenchError, match="does not exist"):
        common.repo_config_path("no_such_config_xyz")


def test_rss_kb_reads_this_process():
    assert common.rss_kb(os.getpid()) > 1000


def test_time_loop_counts_items_and_calls():
    res = common.time_loop(lambda i: 2, duration_s=0.0, min_calls=5)
    assert res["calls"] == 5 and res["items"] == 10 and res["items_per_s"] > 0


def test_write_result_adds_machine_info_and_drops_nan(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", str(tmp_path))
    path = common.write_result("x", {"ratio": float("nan"), "nested": {"a": [1.5, float("inf")]}})
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["bench"] == "x" and doc["ratio"] is None and doc["nested"]["a"] == [1.5, None]
    assert doc["machine"]["nproc"] == os.cpu_count()


def test_verdict():
    assert common.verdict(0.95, 0.9) == "MET"
    assert common.verdict(0.85, 0.9) == "MISSED"
    assert common.verdict(1.5, 2.0, higher_is_better=False) == "MET"
    assert common.verdict(2.5, 2.0, higher_is_better=False) == "MISSED"
