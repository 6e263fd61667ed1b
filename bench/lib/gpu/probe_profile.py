"""Probe step 4, profile: a torch.profiler trace of one det call (batch 1) and one rec call
(batch 8, width 320), fp32, graphs off, each after warm-up calls (its plan frozen): how many
kernels, synchronisations and copies one call makes, and its CPU wall time against the
GPU's summed kernel time (a gap: the device waits on the host). The trace is kept in --out
when small; the counts come from it (Chrome trace JSON, stable across torch versions)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .probe_models import random_feed, runner
from .probe_step import StepContext

WARMUP = 2
KEEP_TRACE_BYTES = 8 * 2**20
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
NO_CUDA = "no CUDA: the trace holds CPU operators only"


def run(ctx: StepContext) -> None:
    plan = ctx.plan
    calls = {
        "det": random_feed("det", 1, plan.det_side, plan.ernie_seq),
        "rec": random_feed("rec", plan.profile_rec_batch, plan.det_side, plan.ernie_seq, rec_width=320),
    }
    for model, feed in calls.items():
        with runner(model, ctx.device) as r:
            for _ in range(WARMUP):
                r.run(feed)
            ctx.put(model, profiled(r, feed, ctx.device, os.path.join(ctx.out, f"profile_{model}.json")))


def profiled(r: Any, feed: Mapping[str, Any], device: str, trace_path: str) -> dict[str, Any]:
    """One call of ``r`` under the profiler: its summary, and where its trace is (if kept)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        r.run(feed)
        wall_ms = (time.perf_counter() - start) * 1000.0
    prof.export_chrome_trace(trace_path)
    with open(trace_path, encoding="utf-8") as f:
        summary = trace_summary(json.load(f))
    size = os.path.getsize(trace_path)
    if size >= KEEP_TRACE_BYTES:
        os.unlink(trace_path)
    summary.update(
        {
            "input": [list(v.shape) for v in feed.values()],
            "cpu_wall_ms": round(wall_ms, 3),
            "trace_bytes": size,
            "trace": os.path.basename(trace_path) if size < KEEP_TRACE_BYTES else None,
        }
    )
    if device == "cuda":
        # the share of the call's wall time the GPU spent in kernels (the rest: host work, copies, waits)
        summary["kernel_share_of_wall"] = round(summary["kernel_ms_sum"] / summary["cpu_wall_ms"], 4)
    else:
        summary["gpu"] = {"skipped": NO_CUDA}
    return summary


def trace_summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Counts and times of a Chrome trace's complete events: kernels, copies (by kind), the
    runtime's synchronisations and copy calls, CPU operators."""
    kernels, kernel_us = 0, 0.0
    memcpy: Counter[str] = Counter()
    memcpy_us = 0.0
    runtime: Counter[str] = Counter()
    cpu_ops = 0
    for event in trace.get("traceEvents", []):
        if event.get("ph") != "X":
            continue
        category, name = str(event.get("cat", "")).lower(), str(event.get("name", ""))
        if category == "kernel":
            kernels += 1
            kernel_us += float(event.get("dur", 0.0))
        elif category == "gpu_memcpy":
            memcpy[name] += 1
            memcpy_us += float(event.get("dur", 0.0))
        elif category in ("cuda_runtime", "cuda_driver"):
            if name in SYNC_CALLS or name.startswith("cudaMemcpy"):
                runtime[name] += 1
        elif category == "cpu_op":
            cpu_ops += 1
    return {
        "kernels": kernels,
        "kernel_ms_sum": round(kernel_us / 1000.0, 3),
        "memcpy": dict(memcpy),
        "memcpy_ms_sum": round(memcpy_us / 1000.0, 3),
        "sync_calls": {name: runtime[name] for name in SYNC_CALLS},
        "memcpy_calls": {name: n for name, n in runtime.items() if name.startswith("cudaMemcpy")},
        "cpu_ops": cpu_ops,
    }
