"""The GPU check's document as a markdown page: environment, lines, batch curves,
served throughput with batching on and off and against the CPU reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .busy import busiest
from .reference import KEY as REFERENCE

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
    if doc.get("reference"):
        parts.append(reference_line(doc["reference"]))
    if "lines" in doc:
        parts += ["## Lines of the committed sample pages against PaddleOCR 2.10's answers", lines_table(doc["lines"])]
    if "curves" in doc:
        parts += ["## Batch curves: one predictor call, in process", curves_table(doc["curves"])]
    for pipeline, rows in doc.get("load", {}).items():
        against = " and the CPU reference" if any(REFERENCE in r for r in rows) else ""
        parts += [f"## Served {pipeline}: closed-loop clients, batching on and off{against}", load_table(rows)]
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


def reference_line(ref: Mapping[str, Any]) -> str:
    """What the CPU reference ("cpu" in the tables) is."""
    return (
        f"CPU reference (`cpu` below): {ref['config']}, the shipped CPU config, on {ref['engine']}, pinned to "
        f"CPUs {', '.join(map(str, ref['cpus']))} ({ref['physical_cores']} physical cores), served beside the GPU "
        "servers and measured in the same rounds."
    )


def lines_table(lines: Mapping[str, Any]) -> str:
    """One row per server: how its pages were sent, lines matched, the verdict."""
    how = {
        "on": "batching on, all pages at once",
        "off": "batching off, one page after another",
        REFERENCE: "CPU reference, all pages at once",
    }
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
    """Clients against requests/s and p99 of each server, batching on over off (and over the
    CPU reference, where there is one), how busy the GPU was (where it was sampled), and rec's
    mean batch with batching on (whether crops did share calls); a level that measured
    nothing: its error."""
    servers = [key for key in ("on", "off", REFERENCE) if any(key in r for r in rows)]
    # how busy the GPU was, where it was sampled (the CPU reference leaves it idle)
    sampled = [key for key in servers if key != REFERENCE and any(r.get(key, {}).get("gpu") for r in rows)]
    header = ["clients"]
    for key in servers:
        header += [f"{key} req/s", f"{key} p99 ms"]
    header += [f"on/{key}" for key in servers[1:]] + [f"{key} GPU busy %" for key in sampled]
    header += ["rec batch (on)", "failed"]
    out = []
    for r in rows:
        row: list[Any] = [r["clients"]]
        for key in servers:
            row += [r.get(key, {}).get("req_per_s"), r.get(key, {}).get("p99_ms")]
        row += [ratio(r.get("on", {}), r.get(key, {})) for key in servers[1:]]
        row += [busiest(r.get(key, {}).get("gpu")) for key in sampled]
        failed = [str(r.get(key, {}).get("failed", r.get(key, {}).get("error"))) for key in servers]
        row += [
            r.get("on", {}).get("mean_batch", {}).get("rec"),
            failed[0] if len(set(failed)) == 1 else " / ".join(failed),
        ]
        out.append(row)
    return table(header, out)


def ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """``a``'s requests/s over ``b``'s (None where either measured nothing)."""
    return a["req_per_s"] / b["req_per_s"] if b.get("req_per_s") and "req_per_s" in a else None


def over_reference(rows: Sequence[Mapping[str, Any]]) -> dict[int, float | None]:
    """Per client level, batching on's requests/s over the CPU reference's (None where either
    measured nothing)."""
    ratios = {row["clients"]: ratio(row.get("on", {}), row.get(REFERENCE, {})) for row in rows}
    return {clients: None if r is None else round(r, 2) for clients, r in ratios.items()}
