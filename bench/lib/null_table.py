"""The null-op table and its RATIO line, from one result per server:
``{"key", "title", "req_per_s", "lone_p50_ms", "lone_p99_ms", "server_cpu_pct",
"client_cpu_pct", "errors", "failed"}`` (``failed``: why it did not run)."""

from __future__ import annotations

import math
from collections.abc import Sequence

OURS = "batchline"


def _num(value: float | None, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, fmt)


def format_table(rows: Sequence[dict], clients: int) -> str:
    """A Markdown table, one line per server, in the order given."""
    lines = [
        f"| server | req/s at {clients} clients | lone request p50 / p99 ms | server CPU (200% = both cores) "
        "| client CPU | errors |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("failed"):
            lines.append(f"| {r['title']} | (could not run: {r['failed']}) | — | — | — | — |")
            continue
        lone = f"{_num(r.get('lone_p50_ms'), '.2f')} / {_num(r.get('lone_p99_ms'), '.2f')}"
        lines.append(
            f"| {r['title']} | {_num(r.get('req_per_s'), ',.0f')} | {lone} | {_num(r.get('server_cpu_pct'), '.0f')}% "
            f"| {_num(r.get('client_cpu_pct'), '.0f')}% | {r.get('errors', 0)} |"
        )
    return "\n".join(lines)


def ratios(rows: Sequence[dict], ours: str = OURS) -> dict[str, float]:
    """req/s of ``ours`` over each other server that ran (NaN where ours did not run)."""
    by_key = {r["key"]: r for r in rows if not r.get("failed") and r.get("req_per_s")}
    mine = by_key.get(ours, {}).get("req_per_s")
    return {key: (mine / r["req_per_s"]) if mine else float("nan") for key, r in by_key.items() if key != ours}


def ratio_line(rows: Sequence[dict], ours: str = OURS) -> str:
    """``RATIO null_op req/s batchline/<peer>: 0.64x mosec ...``, failed peers named as such."""
    parts = [f"{v:.2f}x {key}" if math.isfinite(v) else f"n/a {key}" for key, v in ratios(rows, ours).items()]
    parts += [f"{r['key']} did not run" for r in rows if r.get("failed") and r["key"] != ours]
    return f"RATIO null_op req/s {ours}/peer: " + ", ".join(parts)
