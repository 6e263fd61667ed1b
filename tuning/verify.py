"""The verification of a tuned config: the original and the tuned config
served side by side (one server each), the bundled bench's closed loop with
the user's inputs run on each in turn (A B B A, so drift in the machine's
speed falls on both), and throughput and p99 compared."""

from __future__ import annotations

import argparse
import io
import statistics
from typing import Any

from rich.console import Console
from rich.table import Table

from client.bench import build_parser, run_levels
from client.stats import percentile
from serving.config.schema import ServingConfig
from tuning.server import Server

#: the tuned config counts as at least as fast within this share (run-to-run noise of a short bench)
NOISE = 0.03
ROUNDS = ("original", "tuned", "tuned", "original")


def verify(
    original: str,
    tuned: str,
    config: ServingConfig,
    args: argparse.Namespace,
    *,
    concurrency: int,
    seconds: float,
    console: Console,
) -> dict[str, Any]:
    """Bench both configs; returns their throughput and p99 and whether the
    tuned one is at least as fast (within ``NOISE``) with p99 within budget."""
    per_round = max(5.0, (seconds - 40.0) / len(ROUNDS) - 2.0)
    bench_args = ["--pipeline", config.name, "--concurrency", str(concurrency)]
    bench_args += ["--duration", f"{per_round:g}", "--warmup", "2", "--timeout", "120"]
    for pattern in args.inputs:
        bench_args += ["--inputs", pattern]
    if args.text_file:
        bench_args += ["--text-file", args.text_file]
    if config.auth_token:
        bench_args += ["--token", config.auth_token]
    runs: dict[str, list[Any]] = {"original": [], "tuned": []}
    console.print(
        f"verifying: {concurrency} closed-loop clients, {per_round:.0f} s per round, rounds {' '.join(ROUNDS)}"
    )
    with Server(original) as before, Server(tuned) as after:
        urls = {"original": before.url, "tuned": after.url}
        for which in ROUNDS:
            parsed = build_parser().parse_args(["--url", urls[which], *bench_args])
            (level,) = run_levels(parsed, io.StringIO())
            runs[which].append(level)
            console.print(f"  {which}: {level.qps:.1f} req/s, {level.failed} failed")
    summary = {which: _summary(levels) for which, levels in runs.items()}
    b, a = summary["original"], summary["tuned"]
    verified = a["qps"] >= (1 - NOISE) * b["qps"] and a["p99_ms"] <= args.p99_ms and a["failed"] == 0
    table = Table(title=f"verification: {concurrency} clients, p99 budget {args.p99_ms:g} ms", title_justify="left")
    for column in ("config", "req/s", "p50 ms", "p99 ms", "failed"):
        table.add_column(column)
    for which in ("original", "tuned"):
        s = summary[which]
        table.add_row(which, f"{s['qps']:.1f}", f"{s['p50_ms']:.0f}", f"{s['p99_ms']:.0f}", str(s["failed"]))
    console.print(table)
    ratio = a["qps"] / b["qps"] if b["qps"] else float("nan")
    console.print(
        f"tuned / original: {ratio:.2f}x req/s; "
        + ("[green]verified" if verified else "[yellow]not verified: keep the original, or tune with more --budget-s")
    )
    return {"concurrency": concurrency, "original": b, "tuned": a, "ratio": ratio, "verified": verified}


def _summary(levels: list[Any]) -> dict[str, Any]:
    latencies = [s * 1000 for level in levels for s in level.latencies_s]
    return {
        "qps": statistics.fmean(level.qps for level in levels),
        "p50_ms": percentile(latencies, 50) if latencies else float("nan"),
        "p99_ms": percentile(latencies, 99) if latencies else float("nan"),
        "failed": sum(level.failed for level in levels),
    }
