"""``batchline tune``'s logic without a model: the simulator (the real batcher
on a cost curve) against queueing theory's closed forms, the recommendation
on fake cost curves, and the tuned config's text."""

from __future__ import annotations

import pytest
import yaml

from tuning.recommend import Option, options, recommend
from tuning.simulate import (
    Settings,
    burst_arrivals,
    linear_cost,
    measured_cost,
    poisson_arrivals,
    simulate,
)
from tuning.tuned_config import Change, tuned_text

SIZES = [1, 2, 4, 8, 16, 32, 64]


# ---- the simulator ------------------------------------------------------------------------------
@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_no_batching_at_constant_cost_is_md1(rho):
    """M/D/1: utilisation rho = lambda*D, mean wait in queue rho*D / (2 (1 - rho))."""
    service = 0.010
    arrivals = poisson_arrivals(rho / service, 60_000, seed=3)
    result = simulate(Settings.no_batching(), lambda n: service, arrivals)
    wait = rho * service / (2 * (1 - rho))
    assert result.utilisation == pytest.approx(rho, rel=0.03)
    assert result.mean_ms / 1000 == pytest.approx(wait + service, rel=0.05)
    assert result.batch_sizes == {1: 60_000}


def test_two_instances_without_batching_is_md2_at_low_load():
    """At low load, two servers rarely queue: the mean is the service time."""
    result = simulate(Settings.no_batching(instances=2), lambda n: 0.010, poisson_arrivals(20, 5000, seed=1))
    assert result.mean_ms == pytest.approx(10.0, rel=0.02)
    assert result.utilisation == pytest.approx(0.1, rel=0.1)


def test_the_fixed_policy_waits_max_queue_delay_when_alone_and_adaptive_does_not():
    lone = [i * 1.0 for i in range(50)]  # one request a second: never a batch-mate
    fixed = Settings(max_batch_size=8, max_queue_delay_ms=20, policy="fixed")
    adaptive = Settings(max_batch_size=8, max_queue_delay_ms=20, policy="adaptive")
    cost = linear_cost(0.010, 0.001)
    assert simulate(fixed, cost, lone).p50_ms == pytest.approx(20 + 11, abs=0.5)
    assert simulate(adaptive, cost, lone).p50_ms == pytest.approx(11, abs=0.5)


def test_gpu_like_batching_multiplies_throughput():
    """A large fixed share: no batching saturates at 1/fixed, batching goes far beyond."""
    cost = linear_cost(0.020, 0.0005)
    arrivals = poisson_arrivals(400, 8000, seed=2)
    batched = simulate(Settings(max_batch_size=32, max_queue_delay_ms=5), cost, arrivals)
    single = simulate(Settings.no_batching(), cost, arrivals[:2000])
    assert batched.throughput_rps == pytest.approx(400, rel=0.05) and batched.p99_ms < 200
    assert single.throughput_rps < 50 and single.p99_ms > 1000  # overloaded: the queue only grows
    assert batched.mean_batch > 8


def test_a_request_of_several_items_ends_with_its_last_item():
    """A burst of 10 items in one request on one instance, batch 4 at 10 ms: 3 runs."""
    result = simulate(Settings(max_batch_size=4), lambda n: 0.010, [0.0], items=[10])
    assert result.p50_ms == pytest.approx(30.0)
    assert result.batch_sizes == {4: 2, 2: 1}


def test_deadlines_expire_queued_requests():
    arrivals = [0.0] * 20
    result = simulate(Settings.no_batching(), lambda n: 0.010, arrivals, deadline_s=0.055)
    assert result.expired == 14 and result.p99_ms <= 60


def test_burst_arrivals_keep_the_mean_rate():
    times = burst_arrivals(100, 4000, burst=8, seed=0)
    assert len(times) == 4000 and 4000 / times[-1] == pytest.approx(100, rel=0.1)
    assert times[0] == times[7]


def test_measured_curve_interpolates_and_extends():
    cost = measured_cost({1: 0.010, 4: 0.016, 8: 0.024})
    assert cost(1) == pytest.approx(0.010)
    assert cost(2) == pytest.approx(0.012)
    assert cost(6) == pytest.approx(0.020)
    assert cost(16) == pytest.approx(0.040)  # the last slope, extended


# ---- the recommendation -------------------------------------------------------------------------
def _best(cost, budget_ms):
    current = Settings(max_batch_size=1)
    candidates = options([("1 x 2", cost, SIZES, 1, 0.0)], budget_ms=budget_ms, current_delay_ms=0)
    best, now = recommend(candidates, Option("1 x 2", current, cost), [1], budget_ms, requests=600)
    return best, now


def test_a_flat_curve_takes_the_largest_batch():
    """GPU-like, batch-size-free cost: each run is worth as many items as it can hold."""
    best, now = _best(lambda n: 0.020, budget_ms=500)
    assert best.option.settings.max_batch_size == 64
    assert best.max_rps > 20 * now.max_rps


def test_a_linear_curve_keeps_batches_small():
    """Cost proportional to items: batching saves nothing, so nothing is changed."""
    best, now = _best(linear_cost(0.0, 0.005), budget_ms=500)
    assert best is now and best.option.settings.max_batch_size == 1


def test_a_tight_budget_caps_the_batch_size():
    """50 ms + 1 ms per item under a 150 ms p99: a batch of 32 alone would take 82 ms,
    more than half the budget, so the largest batch that fits is chosen."""
    best, _ = _best(linear_cost(0.050, 0.001), budget_ms=150)
    assert best.option.settings.max_batch_size == 16
    assert best.at_max is not None and best.at_max.p99_ms <= 150


def test_the_best_layout_wins_across_curves():
    slow, fast = linear_cost(0.020, 0.002), linear_cost(0.010, 0.001)
    candidates = options(
        [("2 x 1", slow, SIZES, 2, 0.0), ("1 x 2", fast, SIZES, 1, 0.0)], budget_ms=400, current_delay_ms=5
    )
    current = Option("2 x 1", Settings(max_batch_size=8, max_queue_delay_ms=5, instances=2, spread=True), slow)
    best, now = recommend(candidates, current, [1], 400, requests=600)
    assert best.option.layout == "1 x 2" and best.max_rps > now.max_rps


# ---- the tuned config's text --------------------------------------------------------------------
def test_the_tuned_config_keeps_comments_and_explains_each_change(tmp_path):
    source = tmp_path / "src" / "rec.yml"
    source.parent.mkdir()
    source.write_text(
        "# my service\nname: rec\nop:\n  rec:\n    class: ocr_rec\n    local_service_conf:\n"
        "      model_config: ./models/rec  # my model\n      max_batch_size: 32   # ours\n"
        "      conv_kernels: jit\n      instance_num: 2\n"
    )
    changes = [
        Change("rec", "max_batch_size", 8, "up to 412 req/s with p99 180 ms"),
        Change("rec", "preferred_batch_size", [4, 8], "fits"),
        Change("rec", "conv_kernels", None, "an OpenVINO Runtime setting"),
    ]
    text = tuned_text(str(source), changes, str(tmp_path))
    assert text.startswith("# my service")
    assert "max_batch_size: 8" in text and "# tuned: up to 412 req/s with p99 180 ms" in text
    assert "preferred_batch_size: [4, 8]" in text and "conv_kernels" not in text
    svc = yaml.safe_load(text)["op"]["rec"]["local_service_conf"]
    assert svc["model_config"] == str(source.parent / "models" / "rec")  # relative to its own file, made absolute
    assert svc["instance_num"] == 2


# ---- the memory budget per batch ----------------------------------------------------------------
def test_memory_per_unit_is_the_slope_through_the_origin_and_sets_max_batch_units():
    from tuning.cli import OpPlan, _units_budget
    from tuning.cost_curves import Curve, Layout, _slope

    assert _slope([(1000, 4000), (2000, 8000), (4000, 16000)]) == pytest.approx(4.0)
    assert _slope([]) is None and _slope([(1000, -5)]) == 0.0
    layout = Layout(1, 2, "openvino")
    curve = Curve(layout, {1: 0.01, 2: 0.02}, 0.0, bytes_per_unit=4.0)
    prediction = recommend([], Option("x", Settings(), lambda n: 0.01), [1], 100, requests=100)[0]
    plan = OpPlan("rec", 100.0, [curve], [1], prediction, prediction, layout, layout)
    assert _units_budget(plan, 100.0) == 100 * (1 << 20) // 4  # 100 MiB at 4 bytes a unit
    assert _units_budget(plan, None) is None


# ---- the command's refusals ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, message",
    [
        (["/no/such/config.yml", "--p99-ms", "100"], "no such file"),
        (["configs/rec.yml", "--p99-ms", "0"], "must be positive"),
        (["configs/rec.yml", "--p99-ms", "100", "--op", "nope"], "no op 'nope'"),
    ],
)
def test_tune_refuses_bad_arguments_with_exit_2_and_a_reason(argv, message, capsys):
    from tests.support.server_process import ROOT
    from tuning.cli import build_parser, main

    argv = [a if not a.startswith("configs/") else f"{ROOT}/{a}" for a in argv]
    assert main(build_parser().parse_args(argv)) == 2
    assert message in capsys.readouterr().err


def test_tune_predicts_spread_batches_only_where_the_server_forms_them():
    """Spreading needs instances that compute at once: processes, or OpenVINO Runtime
    (GIL released). Paddle's in-process instances take turns, so the server does not spread."""
    from serving.config.schema import LocalServiceConf
    from tuning.cli import layout_spreads
    from tuning.cost_curves import Layout

    threads = LocalServiceConf(instance_num=1, thread_num=2, engine="paddle")
    assert not layout_spreads(threads, Layout(2, 1, "paddle"))
    assert layout_spreads(threads, Layout(2, 1, "openvino"))
    assert not layout_spreads(threads, Layout(1, 2, "openvino"))
    processes = LocalServiceConf(instance_num=1, thread_num=2, engine="paddle", instance_mode="process")
    assert layout_spreads(processes, Layout(2, 1, "paddle"))
    never = LocalServiceConf(instance_num=1, thread_num=2, engine="paddle", spread_batches=False)
    assert not layout_spreads(never, Layout(2, 1, "openvino"))
