"""bench.lib.configs: derived bench configs (no model, no server)."""

import os

import pytest
import yaml

from bench.lib.configs import apply_overrides, derive_config, pipeline_name, repo_config_path, write_config
from bench.lib.paths import CONFIG_DIR
from bench.lib.script import BenchError

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
    out = apply_overrides(
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
    with pytest.raises(BenchError, match="no op 'recc'"):
        apply_overrides(BASE, ops={"recc": {"max_batch_size": 1}})
    with pytest.raises(BenchError, match="no op 'x'"):
        apply_overrides(BASE, params={"x": {}})


def test_write_config_round_trips_through_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    path = write_config(apply_overrides(BASE, ops={"rec": {"instance_num": 4}}), tag="t")
    assert path.startswith(str(tmp_path)) and path.endswith(".yml")
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    assert data["op"]["rec"]["local_service_conf"]["instance_num"] == 4
    assert pipeline_name(path) == "rec"


def test_derive_config_from_the_repo_rec_config_validates(tmp_path, monkeypatch):
    if not os.path.isfile(os.path.join(CONFIG_DIR, "rec.yml")):
        pytest.skip("configs/rec.yml not present")
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    from serving.config import load_config

    path = derive_config("rec", ops={"rec": {"max_batch_size": 1, "batching_policy": "fixed"}})
    conf = load_config(path).op["rec"].local_service_conf
    assert conf.max_batch_size == 1 and conf.batching_policy == "fixed"


def test_missing_repo_config_is_a_bench_error():
    with pytest.raises(BenchError, match="does not exist"):
        repo_config_path("no_such_config_xyz")
