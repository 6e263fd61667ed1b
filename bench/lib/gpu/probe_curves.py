"""Probe step 5, curves: time per call against batch size, det at batch 1/2/4/8 on square
pages and rec at 1/8/32/64/128 at each width, for fp32 and fp16, graphs off and on.

On a GPU each point is timed with CUDA events around the instance's computation
(``runner.forward``: its CUDA graph for the shape, or its module) on inputs already on the
device: the device's time, no copies; with graphs on the shape is
warmed until its graph is captured (its second call), then replays are timed. Beside it,
``wall_ms``: ``runner.run`` on numpy arrays (copies in and out, as a server calls it). On
the CPU the module runs eagerly and ``runner.run`` is timed with perf_counter; fp16 and
graphs are recorded as skipped there. Points are written as they are measured."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .probe_models import random_feed, runner
from .probe_step import StepContext, failure

# (precision, graphs): the most telling first, so a step stopped early has them
VARIANTS = (("fp32", False), ("fp16", False), ("fp32", True), ("fp16", True))
NO_CUDA = "no CUDA: {what} measured on a CUDA device only"
# a graph is captured on a shape's second call (serving/runners/bucket_cache.py)
GRAPH_WARMUP = 2


def variant_name(precision: str, graphs: bool) -> str:
    return f"{precision}_graphs_{'on' if graphs else 'off'}"


def skipped(device: str, precision: str, graphs: bool) -> str | None:
    if device == "cuda":
        return None
    if graphs:
        return NO_CUDA.format(what="CUDA graphs are")
    return NO_CUDA.format(what=f"{precision} is") if precision == "fp16" else None


def shapes(ctx: StepContext) -> dict[str, list[dict[str, Any]]]:
    """Each model's points to measure: batch, and the feed's side or width."""
    plan = ctx.plan
    return {
        "det": [{"batch": b, "side": plan.curve_det_side} for b in plan.det_sizes],
        "rec": [{"batch": b, "width": w} for w in plan.rec_widths for b in plan.rec_sizes],
    }


def feed_of(ctx: StepContext, model: str, shape: Mapping[str, int]) -> dict[str, np.ndarray]:
    side = shape.get("side", ctx.plan.curve_det_side)
    return random_feed(model, shape["batch"], side, ctx.plan.ernie_seq, rec_width=shape.get("width", 320))


def run(ctx: StepContext) -> None:
    points = shapes(ctx)
    for model in points:
        ctx.record[model] = {}
    for precision, graphs in VARIANTS:
        name = variant_name(precision, graphs)
        why = skipped(ctx.device, precision, graphs)
        for model, wanted in points.items():
            if why:
                ctx.record[model][name] = {"skipped": why}
                continue
            measured: list[dict[str, Any]] = []
            ctx.record[model][name] = {"timer": timer_name(ctx.device), "points": measured}
            try:
                measure(ctx, model, precision, graphs, wanted, measured)
            except Exception as exc:  # noqa: BLE001 - a variant that cannot load is its entry; the next one runs
                ctx.record[model][name].update(failure(exc))
        ctx.save()


def measure(
    ctx: StepContext, model: str, precision: str, graphs: bool, wanted: list[dict[str, Any]], measured: list
) -> None:
    """One runner of the variant, each shape's point appended to ``measured`` and written."""
    warmup = max(ctx.plan.curve_warmup, GRAPH_WARMUP) if graphs else ctx.plan.curve_warmup
    with runner(model, ctx.device, precision, graphs) as r:
        for shape in wanted:
            try:
                found = point(r, feed_of(ctx, model, shape), ctx.device, warmup, ctx.plan.curve_repeats)
                if graphs:
                    found["graphs_captured"] = r.buckets.captured if r.buckets is not None else 0
            except Exception as exc:  # noqa: BLE001 - a shape that fails (memory, capture) is its point
                found = failure(exc)
            measured.append({**shape, **found})
            ctx.save()


def timer_name(device: str) -> str:
    return "cuda_event (runner.forward on device inputs)" if device == "cuda" else "perf_counter (runner.run)"


def point(r: Any, feed: Mapping[str, np.ndarray], device: str, warmup: int, repeats: int) -> dict[str, Any]:
    """One shape's median time per call and items/s (and, on a GPU, ``runner.run``'s wall time)."""
    batch = next(iter(feed.values())).shape[0]
    wall = timed_wall(lambda: r.run(feed), warmup, repeats)
    times = event_times(r, feed, warmup, repeats) if device == "cuda" else wall
    ms = statistics.median(times)
    out = {
        "ms": round(ms, 3),
        "ms_min": round(min(times), 3),
        "ms_max": round(max(times), 3),
        "items_per_s": round(batch * 1000.0 / ms, 3) if ms > 0 else None,
    }
    if device == "cuda":
        out["wall_ms"] = round(statistics.median(wall), 3)
    return out


def timed_wall(call: Callable[[], Any], warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def event_times(r: Any, feed: Mapping[str, np.ndarray], warmup: int, repeats: int) -> list[float]:
    """CUDA-event times of the instance's computation (graph or module) on device inputs, on a stream of our own."""
    import torch

    inputs = [torch.from_numpy(np.ascontiguousarray(feed[name])).cuda() for name in r.input_names]
    torch.cuda.synchronize()  # the inputs were copied on the default stream; the timed one is another
    stream = torch.cuda.Stream()
    times = []
    with torch.inference_mode(), torch.cuda.stream(stream):
        for _ in range(warmup):
            r.forward(inputs)
        stream.synchronize()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            r.forward(inputs)
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end))
    return times
