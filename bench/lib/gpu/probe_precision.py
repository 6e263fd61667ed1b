"""Probe step 3, precision: fp16 and bf16 (weights cast once, frozen plans) against fp32 on
the device, per model on parity's fixed inputs (max |Δ|), and for rec the text of real
crops (:mod:`.probe_crops`) read through the rec op (its CTC decoding) at each precision:
how many read as fp32 reads them, and as PaddleOCR read them.

fp16 is a GPU's: on ``--device cpu`` it is recorded as skipped, with the reason; bf16 runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .probe_crops import RecRequest, rec_requests, texts_of
from .probe_models import MODELS, compared, compared_feed, runner
from .probe_step import StepContext

LOW = ("fp16", "bf16")
NO_CUDA_FP16 = "fp16 is measured on a CUDA device only (--device cpu: no CUDA)"
#: differing texts kept in the record
SHOWN = 5


def skipped(device: str, precision: str) -> str | None:
    """Why ``precision`` is not measured on ``device`` (None: it is)."""
    return NO_CUDA_FP16 if device == "cpu" and precision == "fp16" else None


def run(ctx: StepContext) -> None:
    requests = rec_requests(ctx.plan.rec_pages)
    paddleocr = [text for r in requests for text in r.expected]
    rec_op = load_rec_op(ctx.device)
    references = {}
    with runner("rec", ctx.device) as fp32:
        texts = read(rec_op, fp32, requests)
    ctx.put("rec_text", {"lines": len(texts), "fp32": agreement(texts, paddleocr, "paddleocr")})
    for model in MODELS:
        with runner(model, ctx.device) as fp32:
            references[model] = fp32.run(feed_of(ctx, model))
    for precision in LOW:
        why = skipped(ctx.device, precision)
        if why:
            ctx.put(precision, {"skipped": why})
            continue
        per_model: dict[str, Any] = {}
        low_texts: list[str] = []
        for model in MODELS:
            with runner(model, ctx.device, precision) as low:
                per_model[model] = compared(model, references[model], low.run(feed_of(ctx, model)))
                if model == "rec":
                    low_texts = read(rec_op, low, requests)
            ctx.put(precision, per_model)
        ctx.record["rec_text"][precision] = {
            **agreement(low_texts, texts, "fp32"),
            **agreement(low_texts, paddleocr, "paddleocr"),
            "differing": [[a, b] for a, b in zip(texts, low_texts) if a != b][:SHOWN],
        }
        ctx.save()


def feed_of(ctx: StepContext, model: str) -> Any:
    return compared_feed(model, ctx.plan.parity_batch, ctx.plan.det_side, ctx.plan.ernie_seq)


def load_rec_op(device: str) -> Any:
    """configs/ocr_gpu.yml's rec op (hooks only: PaddleOCR's padding and its CTC decoding),
    keeping every line (drop_score 0: the texts are compared line by line)."""
    from bench.lib.configs import apply_overrides
    from bench.lib.inprocess import load_op

    from . import configs

    data = apply_overrides(configs.check_config(device), params={"rec": {"drop_score": 0.0}})
    return load_op(configs.ocr_file(configs.write_repository(data, "probe")), "rec")


def read(op: Any, rec_runner: Any, requests: Sequence[RecRequest]) -> list[str]:
    """The text of every line of the requests, read through the rec op on ``rec_runner``."""
    from serving.batching.direct import run_op_direct

    return [text for r in requests for text in texts_of(run_op_direct(op, rec_runner, r.inputs))]


def agreement(texts: Sequence[str], expected: Sequence[str], against: str) -> dict[str, Any]:
    same = sum(a == b for a, b in zip(texts, expected))
    return {f"same_as_{against}": same, f"rate_vs_{against}": round(same / len(texts), 4) if texts else None}
