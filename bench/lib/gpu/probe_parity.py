"""Probe step 2, parity: each model at fp32 on the device against fp32 on the CPU, on the
same fixed inputs (random; for det a sample page: :func:`.probe_models.compared_feed`): the
max |Δ| over its outputs (fp32 on a GPU is strict, no TF32, so it should be near rounding).
On ``--device cpu`` both runs are the CPU's (Δ 0: a check of the step, not of a GPU)."""

from __future__ import annotations

from typing import Any

from .probe_models import MODELS, compared, compared_feed, runner, shapes
from .probe_step import StepContext, failure


def run(ctx: StepContext) -> None:
    plan = ctx.plan
    for model in MODELS:
        feed = compared_feed(model, plan.parity_batch, plan.det_side, plan.ernie_seq)
        try:
            ctx.put(model, compare(model, ctx.device, feed))
        except Exception as exc:  # noqa: BLE001 - one model's failure is its entry; the others still run
            ctx.put(model, failure(exc))


def compare(model: str, device: str, feed: dict[str, Any]) -> dict[str, Any]:
    with runner(model, "cpu") as cpu:
        reference = cpu.run(feed)
    with runner(model, device) as dev:
        outputs = dev.run(feed)
        where = dev.device
    return {
        "inputs": shapes(feed),
        "outputs": shapes(reference),
        "runner": where,
        **compared(model, reference, outputs),
    }
