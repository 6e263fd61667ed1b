"""The verification of a tuned config: the original and the tuned config
served side by side (one server each) and the bundled bench's closed loop,
with the user's inputs, at a few concurrency levels (one client up to the predicted load) on each in turn (the
order alternating per level, so drift in the machine's speed falls on both).
Each config's figure is its highest throughput at a level whose p99 is
within the budget: what it can serve while keeping the promise."""

from __future__ import annotations

import argparse
import io
from typing import Any

from rich.console import Console
from rich.table import Table

from client.bench import build_parser, run_levels
from client.stats import percentile
from serving.config.schema import ServingConfig
from tuning.server import Server

#: the tuned config counts as at least as fast within this share (run-to-run noise of a short bench)
NOISE = 0.05
CONFIGS = ("original", "tuned")


def levels_for(concurrency: int) -> list[int]:
    """Closed-loop levels up to ``concurrency``: one client, a quarter, a half and all of it."""
    return sorted({1, max(1, concurrency // 4), max(1, concurrency // 2), max(1, concurrency)})


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
    """Bench both configs; returns each level's throughput and p99 per config,
    each config's best throughput within the budget, and whether the tuned one
    is at least as fast there (within ``NOISE``)."""
    levels = levels_for(concurrency)
    per_run = max(5.0, (seconds - 40.0) / (2 * len(levels)) - 2.0)
    common = ["--pipeline", config.name, "--duration", f"{per_run:g}", "--warmup", "2", "--timeout", "120"]
    for pattern in args.inputs:
        common += ["--inputs", pattern]
    if args.text_file:
        common += ["--text-file", args.text_file]
    if config.auth_token:
        common += ["--token", config.auth_token]
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    console.print(f"verifying: closed loop at {levels} clients, {per_run:.0f} s each, both configs")
    with Server(original) as before, Server(tuned) as after:
        urls = {"original": before.url, "tuned": after.url}
        for i, level in enumerate(levels):
            for name in CONFIGS if i % 2 == 0 else reversed(CONFIGS):
                parsed = build_parser().parse_args(["--url", urls[name], "--concurrency", str(level), *common])
                (result,) = run_levels(parsed, io.StringIO())
                row = _row(result, level)
                rows[name].append(row)
                console.print(f"  {name} at {level}: {row['qps']:.1f} req/s, p99 {row['p99_ms']:.0f} ms")
    best = {name: _best_within(rows[name], args.p99_ms) for name in CONFIGS}
    b, a = best["original"], best["tuned"]
    failed = sum(r["failed"] for r in rows["tuned"])
    verified = failed == 0 and a is not None and (b is None or a >= (1 - NOISE) * b)
    _print(console, rows, best, args.p99_ms)
    ratio = a / b if a and b else float("nan")
    console.print(
        f"within the p99 budget, tuned / original: {ratio:.2f}x req/s; "
        + ("[green]verified" if verified else "[yellow]not verified: keep the original, or tune with more --budget-s")
    )
    return {"levels": levels, "runs": rows, "best_within_budget": best, "ratio": ratio, "verified": verified}


def _row(result: Any, level: int) -> dict[str, Any]:
    latencies = [s * 1000 for s in result.latencies_s]
    return {
        "clients": level,
        "qps": result.qps,
        "p50_ms": percentile(latencies, 50) if latencies else float("nan"),
        "p99_ms": percentile(latencies, 99) if latencies else float("nan"),
        "failed": result.failed,
    }


def _best_within(rows: list[dict[str, Any]], budget_ms: float) -> float | None:
    """The highest throughput at a level with p99 within the budget and no failure (None: no such level)."""
    fits = [r["qps"] for r in rows if r["p99_ms"] <= budget_ms and r["failed"] == 0]
    return max(fits) if fits else None


def _print(console: Console, rows: dict[str, list[dict[str, Any]]], best: dict[str, Any], budget_ms: float) -> None:
    table = Table(title=f"verification (p99 budget {budget_ms:g} ms)", title_justify="left")
    for column in ("clients", "original req/s", "original p99 ms", "tuned req/s", "tuned p99 ms"):
        table.add_column(column)
    for before, after in zip(rows["original"], rows["tuned"]):
        table.add_row(
            str(before["clients"]),
            f"{before['qps']:.1f}",
            f"{before['p99_ms']:.0f}",
            f"{after['qps']:.1f}",
            f"{after['p99_ms']:.0f}",
        )
    shown = {k: "none" if v is None else f"{v:.1f}" for k, v in best.items()}
    table.add_row("best within budget", shown["original"], "", shown["tuned"], "")
    console.print(table)
