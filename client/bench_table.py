"""``batchline bench``'s results as tables (rich): one row per load level, and
per level and op the batching figures scraped from ``/metrics``. They read
the dicts of ``LevelResult.to_dict`` (or a ``--json`` file), so a run and a
file print alike. On a terminal they are drawn to its width; written to a
file or a pipe, they are plain text."""

from __future__ import annotations

import math
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table

from .stats import format_errors

# A stream that is no terminal gets this width: the tables fit without wrapping.
PLAIN_WIDTH = 120


def _fmt(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _pct(x: float | None) -> float | None:
    return None if x is None else x * 100.0


def _knob(level: dict[str, Any]) -> str:
    return f"{level['rate']:g}/s" if level["mode"] == "open" else f"c={level['concurrency']}"


def _table(*headers: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 or header in ("op", "errors") else "right")
    return table


def levels_table(levels: list[dict[str, Any]]) -> Table:
    """Requests, throughput, latency percentiles and failures per level."""
    table = _table("level", "requests", "qps", "p50 ms", "p90 ms", "p99 ms", "errors")
    for lv in levels:
        lat = lv["latency_ms"]
        table.add_row(
            _knob(lv),
            str(lv["requests"]),
            f"{lv['qps']:.2f}",
            _fmt(lat.get("p50")),
            _fmt(lat.get("p90")),
            _fmt(lat.get("p99")),
            format_errors(lv["errors"], lv.get("dropped", 0)),
        )
    return table


def ops_table(levels: list[dict[str, Any]]) -> Table | None:
    """Per level and op: items per dispatch, rows per predictor call, queue wait, run time, padding."""
    table = _table("level", "op", "batch", "rows/call", "queue wait ms", "run ms", "padding %")
    for lv in levels:
        for op, s in lv.get("op_stats", {}).items():
            table.add_row(
                _knob(lv),
                op,
                _fmt(s.get("mean_batch_size"), ".2f"),
                _fmt(s.get("mean_call_rows"), ".2f"),
                _fmt(s.get("mean_queue_wait_ms")),
                _fmt(s.get("mean_run_ms")),
                _fmt(_pct(s.get("padding_ratio"))),
            )
    return table if table.row_count else None


def print_results(out: TextIO, title: str, levels: list[dict[str, Any]]) -> None:
    """``== title`` then the tables."""
    console = Console(file=out, width=None if out.isatty() else PLAIN_WIDTH, highlight=False, soft_wrap=False)
    console.print(f"== {title}", markup=False)
    console.print(levels_table(levels))
    ops = ops_table(levels)
    if ops is not None:
        console.print()
        console.print(ops)
