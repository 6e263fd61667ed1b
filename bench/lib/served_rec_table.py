"""The served-rec table and its RATIO line, from one row per contender:
``{"key", "title", "crops_per_s", "latency_ms": {"p50", "p99"}, "errors",
"agree", "failed"}`` (``failed``: why it did not run). The row keyed
:data:`BARE` is the limit every other row is a fraction of."""

from __future__ import annotations

import math
from collections.abc import Sequence

BARE = "bare"
OURS = "batchline"


def _num(value: float | None, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, fmt)


def _rate(rows: Sequence[dict], key: str) -> float | None:
    for r in rows:
        if r["key"] == key and not r.get("failed"):
            return r.get("crops_per_s")
    return None


def of_bare(rows: Sequence[dict]) -> dict[str, float]:
    """crops/s of each server that ran over the bare engine's (NaN without a bare row)."""
    bare = _rate(rows, BARE)
    return {
        r["key"]: (r["crops_per_s"] / bare) if bare else float("nan")
        for r in rows
        if r["key"] != BARE and not r.get("failed") and r.get("crops_per_s") is not None
    }


def format_table(rows: Sequence[dict], clients: int) -> str:
    """A Markdown table, one line per contender, in the order given."""
    ratios = of_bare(rows)
    lines = [
        f"| served rec, {clients} clients | crops/s | of bare engine | p50 / p99 ms | errors | texts agree |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("failed"):
            lines.append(f"| {r['title']} | (could not run: {r['failed']}) | — | — | — | — |")
            continue
        lat = r.get("latency_ms", {})
        latency = "—" if r["key"] == BARE else f"{_num(lat.get('p50'), '.0f')} / {_num(lat.get('p99'), '.0f')}"
        share = "1.00 (limit)" if r["key"] == BARE else _num(ratios.get(r["key"]), ".2f")
        lines.append(
            f"| {r['title']} | {_num(r.get('crops_per_s'), '.1f')} | {share} | {latency} "
            f"| {r.get('errors', 0)} | {r.get('agree', '—')} |"
        )
    return "\n".join(lines)


def ratio_line(rows: Sequence[dict], ours: str = OURS) -> str:
    """``RATIO served_rec crops/s: batchline 0.80x bare; batchline/peer 1.10x mosec_b1 ...``."""
    shares = of_bare(rows)
    mine = _rate(rows, ours)
    parts = [f"{ours} {shares[ours]:.2f}x bare" if math.isfinite(shares.get(ours, math.nan)) else f"{ours} n/a bare"]
    peers = []
    for r in rows:
        if r["key"] in (ours, BARE):
            continue
        if r.get("failed"):
            peers.append(f"{r['key']} did not run")
        elif mine and r.get("crops_per_s"):
            peers.append(f"{mine / r['crops_per_s']:.2f}x {r['key']}")
        else:
            peers.append(f"n/a {r['key']}")
    return f"RATIO served_rec crops/s: {parts[0]}; {ours}/peer: " + ", ".join(peers)
