"""The GPU check's document as a markdown page: environment, lines, batch curves,
served throughput with batching on and off."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ENV_ROWS = (
    ("device", "device"),
    ("gpu", "GPU"),
    ("gpu_memory_gib", "GPU memory (GiB)"),
    ("driver", "driver"),
    ("torch", "torch"),
    ("cuda", "CUDA (torch's build)"),
    ("cpu", "CPU"),
    ("nproc", "cores"),
    ("python", "Python"),
    ("commit", "batchline commit"),
)


def markdown(doc: Mapping[str, Any]) -> str:
    """The whole page: the sections a run got to (a failed one says where it stopped)."""
    parts = [
        f"# GPU check: {doc['config']} on {doc['environment']['device']}, engine {doc['engine']}"
        + (" (--quick)" if doc["quick"] else ""),
        environment_table(doc["environment"]),
    ]
    if "lines" in doc:
        parts += ["## Lines of the committed sample pages against PaddleOCR 2.10's answers", lines_table(doc["lines"])]
    if "curves" in doc:
        parts += ["## Batch curves: one predictor call, in process", curves_table(doc["curves"])]
    for pipeline, rows in doc.get("load", {}).items():
        parts += [f"## Served {pipeline}: closed-loop clients, batching on and off", load_table(rows)]
    if doc.get("failed"):
        parts.append(f"**Stopped:** {doc['failed']}")
    steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in doc["steps_s"].items())
    parts.append(f"Run time: {doc['elapsed_s']:.0f} s ({steps or 'no step finished'}).")
    return "\n\n".join(parts) + "\n"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def environment_table(env: Mapping[str, Any]) -> str:
    return table(["", ""], [(label, env.get(key)) for key, label in ENV_ROWS if key in env])


def lines_table(lines: Mapping[str, Any]) -> str:
    """One row per server: how its pages were sent, lines matched, the verdict."""
    how = {"on": "batching on, all pages at once", "off": "batching off, one page after another"}
    rows = [
        (
            how[key],
            r["pages"],
            r["lines"],
            r["matched"],
            f"{r['rate']:.2%}",
            f">= {r['min_match']:.0%}",
            "ok" if r["ok"] else "FAILED",
        )
        for key, r in lines.items()
    ]
    return table(["server", "pages", "PaddleOCR lines", "identical", "rate", "bound", "verdict"], rows)


def curves_table(curves: Mapping[str, Any]) -> str:
    """Batch size against each op's median call time and time per item."""
    by_size: dict[int, dict[str, Any]] = {}
    for op, c in curves.items():
        for point in c["points"]:
            by_size.setdefault(point["batch"], {})[op] = point
    ops = list(curves)
    header = ["batch"] + [f"{op} {what}" for op in ops for what in ("ms/call", "ms/item")]
    rows = []
    for size in sorted(by_size):
        row: list[Any] = [size]
        for op in ops:
            point = by_size[size].get(op)
            row += [point["ms"], point["ms_per_item"]] if point else [None, None]
        rows.append(row)
    inputs = "; ".join(f"{op} input per item {c['input_per_item']}" for op, c in curves.items())
    first = next(iter(curves.values()))
    note = f"Median of {first['repeats']} calls after {first['warmup']} warm-up calls; {inputs}."
    return table(header, rows) + "\n\n" + note


def load_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Clients against requests/s and p99 of each server, their ratio, and rec's mean batch
    with batching on (whether crops did share calls); a level that measured nothing: its error."""
    out = []
    for r in rows:
        on, off = r["on"], r["off"]
        ratio = on["req_per_s"] / off["req_per_s"] if off.get("req_per_s") and "req_per_s" in on else None
        batch = on.get("mean_batch", {}).get("rec")
        failed = on.get("failed", on.get("error")), off.get("failed", off.get("error"))
        row = (r["clients"], on.get("req_per_s"), on.get("p99_ms"), off.get("req_per_s"), off.get("p99_ms"))
        out.append((*row, ratio, batch, failed[0] if failed[0] == failed[1] else f"{failed[0]} / {failed[1]}"))
    header = ["clients", "on req/s", "on p99 ms", "off req/s", "off p99 ms", "on/off", "rec batch (on)", "failed"]
    return table(header, out)
