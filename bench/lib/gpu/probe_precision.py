"""Probe step 3, precision: fp16 and bf16 (weights cast once, reductions and heads in fp32) against fp32 on
the device, per model on parity's fixed inputs (max |Δ|), and for rec the text of real
crops (:mod:`.probe_crops`) read through the rec op (its CTC decoding) at each precision:
how many read as fp32 reads them, and as PaddleOCR read them.

fp16 is a GPU's: on ``--device cpu`` it is recorded as skipped, with the reason; bf16 runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .probe_crops import RecRequest, rec_requests, texts_of
from .probe_models import MODELS, compared, compared_feed, runner
from .probe_step import StepContext, failure

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
    texts: list[str] | None = None
    try:
        rec_op = load_rec_op(ctx.device)
        with runner("rec", ctx.device) as fp32:
            texts = read(rec_op, fp32, requests)
        ctx.put("rec_text", {"lines": len(texts), "fp32": agreement(texts, paddleocr, "paddleocr")})
    except Exception as exc:  # noqa: BLE001 - without the texts the differences are still measured
        ctx.put("rec_text", failure(exc))
    references: dict[str, Any] = {}
    for model in MODELS:
        try:
            with runner(model, ctx.device) as fp32:
                references[model] = fp32.run(feed_of(ctx, model))
        except Exception as exc:  # noqa: BLE001 - recorded below, per precision; the other models still run
            references[model] = failure(exc)
    for precision in LOW:
        why = skipped(ctx.device, precision)
        if why:
            ctx.put(precision, {"skipped": why})
            continue
        per_model: dict[str, Any] = {}
        ctx.put(precision, per_model)
        for model in MODELS:
            if isinstance(references[model], dict):
                per_model[model] = {"error": f"no fp32 reference: {references[model]['error']}"}
                continue
            try:
                with runner(model, ctx.device, precision) as low:
                    per_model[model] = compared(model, references[model], low.run(feed_of(ctx, model)))
                    if model == "rec" and texts is not None:
                        ctx.record["rec_text"][precision] = text_agreement(
                            read(rec_op, low, requests), texts, paddleocr
                        )
            except Exception as exc:  # noqa: BLE001 - one model's failure is its entry; the others still run
                per_model[model] = failure(exc)
            ctx.save()


def text_agreement(low: Sequence[str], fp32: Sequence[str], paddleocr: Sequence[str]) -> dict[str, Any]:
    return {
        **agreement(low, fp32, "fp32"),
        **agreement(low, paddleocr, "paddleocr"),
        "differing": [[a, b] for a, b in zip(fp32, low) if a != b][:SHOWN],
    }


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
