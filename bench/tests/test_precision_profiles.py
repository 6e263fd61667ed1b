"""bench.lib.precision_profiles / ocr_chain / precision_table: profiles are a
config plus overrides, every shipped profile derives a valid config, stages
are shared only when everything upstream is the same (no model is loaded)."""

import pytest

from bench.lib.ocr_chain import chain_order, plan_stages, profile_config
from bench.lib.precision_profiles import PROFILES, Profile, parse_profile
from bench.lib.precision_table import Row, pick, table
from bench.lib.script import BenchError
from tests.support.ocr_accuracy import PageScore, ParityScore


def test_a_profile_on_the_command_line_is_a_config_and_overrides():
    p = parse_profile("ov=ocr,det.engine=openvino,rec.precision=bf16,rec.params.pad_policy=bucket,det.thread_num=2")
    assert (p.name, p.config) == ("ov", "ocr")
    assert p.ops == {"det": {"engine": "openvino", "thread_num": 2}, "rec": {"precision": "bf16"}}
    assert p.params == {"rec": {"pad_policy": "bucket"}}
    q = parse_profile("q=ocr,rec.runtime=int8,needs=BF16")
    assert q.runtime == {"rec": "int8"} and q.needs == ("INT8", "nncf", "BF16")
    for bad in ("noconfig", "x=", "x=ocr,det", "x=ocr,a.b.c.d=1", "x=ocr,rec.runtime=fp8"):
        with pytest.raises(BenchError):
            parse_profile(bad)


def test_needs_are_checked_against_the_cpu_and_nncf():
    bf16 = next(p for p in PROFILES if p.name == "bf16-rec")
    assert bf16.missing({"FP32", "INT8"}, True) == ["BF16"]
    assert bf16.missing({"FP32", "BF16"}, False) == []
    int8 = next(p for p in PROFILES if p.name == "int8-rec")
    assert int8.missing({"FP32", "INT8"}, False) == ["nncf"]
    assert int8.missing({"FP32", "INT8"}, True) == []


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_shipped_profile_derives_a_config_the_server_accepts(profile, tmp_path):
    from bench.lib.configs import write_config
    from serving.config import load_config

    config = profile_config(profile, threads=1)
    for conf in config["op"].values():
        svc = conf["local_service_conf"]
        assert (svc["instance_mode"], svc["instance_num"], svc["thread_num"]) == ("thread", 1, 1)
    loaded = load_config(write_config(config, tag="test"))
    for op, keys in profile.ops.items():
        for key, value in keys.items():
            assert getattr(loaded.op[op].local_service_conf, key) == value
    assert set(profile.runtime) <= set(config["op"])


def test_the_chain_runs_source_first_and_refuses_a_graph():
    ops = {"rec": {"input_ops": ["cls"]}, "det": {"input_ops": []}, "cls": {"input_ops": ["det"]}}
    assert chain_order({"op": ops}) == ["det", "cls", "rec"]
    with pytest.raises(BenchError):
        chain_order({"op": {"a": {"input_ops": []}, "b": {"input_ops": ["a"]}, "c": {"input_ops": ["a"]}}})


def test_stages_are_shared_only_with_the_same_op_runner_upstream_and_pages():
    exact = Profile("exact", "ocr")
    bucket = Profile("b", "ocr", params={"rec": {"pad_policy": "bucket"}})
    det8 = Profile("d", "ocr", runtime={"det": "int8"})

    def keys(p, pages="p1", tags=None):
        return [s.key for s in plan_stages(p, profile_config(p, 1), tags or {"int8": "calib-a"}, pages)]

    e = keys(exact)
    assert keys(exact) == e
    assert keys(bucket)[0] == e[0] and keys(bucket)[1] != e[1]  # same det, another rec
    assert keys(det8)[0] != e[0] and keys(det8)[1] != e[1]  # another det: rec sees other crops
    assert keys(det8, tags={"int8": "calib-b"})[0] != keys(det8)[0]  # another calibration, another model
    assert keys(exact, pages="p2")[0] != e[0]  # other pages
    with pytest.raises(BenchError, match="lacks"):
        plan_stages(Profile("x", "ocr", runtime={"cls": "int8"}), profile_config(exact, 1), {})


def _row(name, errors, ms):
    return Row(
        name, scores=[PageScore(100, errors, 2, 0, 0)] * 3, parity=ParityScore(6, 6, 6, 0, [0.0] * 6), ms_per_page=ms
    )


def test_the_pick_is_the_fastest_profile_at_least_as_accurate_as_the_base():
    base, fast_worse, slow_better, unavailable = (
        _row("exact", 2, 100.0),
        _row("int8", 3, 60.0),
        _row("x", 1, 90.0),
        Row("bf16", status="unavailable", reason="not supported on this CPU"),
    )
    rows = [base, fast_worse, slow_better, unavailable]
    assert pick(rows, base) is slow_better
    assert pick([base, fast_worse], base) is base
    text = table(rows, base, ["det", "rec"])
    assert "| bf16 | unavailable: not supported on this CPU |" in text
    assert "| int8 | 97.00% | -1.00" in text and "1.67x" in text
    assert base.to_dict(None)["char_accuracy"] == pytest.approx(0.98)
    assert fast_worse.to_dict(base)["delta_vs_base"] == pytest.approx(-0.01)
