"""The GPU probe's document as a short markdown page: each step's status, then what it
measured (a step that failed or ran out of time shows what it had written)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .report import cell, load_table, table

VERSION_ROWS = ("device", "python", "torch", "cuda", "cudnn", "gpu", "driver", "cv2", "commit")


def markdown(doc: Mapping[str, Any]) -> str:
    steps = doc.get("steps", {})
    parts = [
        f"# GPU probe on {doc['device']}" + (" (--quick)" if doc.get("quick") else ""),
        status_table(steps),
    ]
    for name, render in SECTIONS.items():
        result = steps.get(name, {}).get("result")
        if result:
            parts += [f"## {name}", section(render, result)]
    parts.append(f"Run time: {doc.get('elapsed_s', 0):.0f} s.")
    return "\n\n".join(parts) + "\n"


def section(render: Callable[[Mapping[str, Any]], str], result: Mapping[str, Any]) -> str:
    """A step's section; a partial record it cannot show is pointed to, and the page goes on."""
    try:
        return render(result)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return f"(not shown: {type(exc).__name__}: {exc}; the JSON holds what was written)"


def status_table(steps: Mapping[str, Any]) -> str:
    rows = [(n, s["status"], s.get("seconds"), s.get("budget_s"), s.get("error", "")) for n, s in steps.items()]
    return table(["step", "status", "s", "budget s", "error"], rows)


def versions(result: Mapping[str, Any]) -> str:
    rows = [(key, result.get(key)) for key in VERSION_ROWS if key in result]
    rows += sorted((name, version) for name, version in result.get("packages", {}).items() if version)
    return table(["", ""], rows)


# a bare | would end a markdown cell
DIFF_HEADER = [r"max \|Δ\|", r"mean \|Δ\|", r"max \|ref\|", "det map flipped", "non-finite"]


def diff_cells(r: Mapping[str, Any]) -> tuple[Any, ...]:
    flipped = r.get("mask_disagreement")
    share = f"{flipped:.3%}" if isinstance(flipped, float) else None
    return (r.get("max_abs_diff"), r.get("mean_abs_diff"), r.get("max_abs_ref"), share, r.get("nonfinite"))


def parity(result: Mapping[str, Any]) -> str:
    rows = [(m, r.get("runner") or r.get("error"), *diff_cells(r)) for m, r in models(result)]
    note = "fp32 on the device against fp32 on the CPU; fixed inputs (random; det: a sample page)."
    return note + "\n\n" + table(["model", "runner", *DIFF_HEADER], rows)


def precision(result: Mapping[str, Any]) -> str:
    rows: list[tuple[Any, ...]] = []
    for low in ("fp16", "bf16"):
        entry = result.get(low, {})
        if "skipped" in entry:
            rows.append((low, "skipped: " + entry["skipped"]))
            continue
        rows += [
            (low, f"{model}: {r['error']}" if "error" in r else model, *diff_cells(r)) for model, r in entry.items()
        ]
    text = result.get("rec_text", {})
    agreement = [
        (p, t.get("same_as_fp32", "-"), t.get("same_as_paddleocr"), text.get("lines"))
        for p, t in text.items()
        if isinstance(t, dict)
    ]
    return (
        "Against fp32 on the device, on parity's inputs.\n\n"
        + table(["precision", "model", *DIFF_HEADER], rows)
        + "\n\nrec's text of real lines (the committed crops, and sample pages at PaddleOCR's boxes):\n\n"
        + table(["precision", "same as fp32", "same as PaddleOCR", "lines"], agreement)
    )


def profile(result: Mapping[str, Any]) -> str:
    rows = []
    for model, r in models(result):
        syncs = sum(r.get("sync_calls", {}).values())
        copies = ", ".join(f"{k} x{v}" for k, v in r.get("memcpy", {}).items()) or "-"
        cells = (r.get("cpu_wall_ms"), r.get("kernel_ms_sum"), r.get("kernels"), syncs, copies, r.get("cpu_ops"))
        rows.append((model, r.get("input"), *cells))
    header = ["call", "input", "CPU wall ms", "GPU kernels ms", "kernels", "syncs", "copies", "CPU ops"]
    return table(header, rows)


def curves(result: Mapping[str, Any]) -> str:
    rows = []
    for model, variants in models(result):
        for variant, entry in variants.items():
            if "skipped" in entry:
                rows.append((model, variant, "skipped: " + entry["skipped"], None, None, None))
                continue
            if "error" in entry:
                rows.append((model, variant, "error: " + entry["error"], None, None, None))
            for p in entry.get("points", []):
                shape = f"{p['side']}x{p['side']}" if "side" in p else f"w {p['width']}"
                ms = p.get("ms", f"error: {p.get('error')}")
                rows.append((model, variant, f"{p['batch']} ({shape})", ms, p.get("items_per_s"), p.get("wall_ms")))
    return table(["model", "variant", "batch", "ms/call", "items/s", "run() wall ms"], rows)


def served(result: Mapping[str, Any]) -> str:
    parts = [f"{pipeline}:\n\n{load_table(result[pipeline])}" for pipeline in ("ocr", "rec") if pipeline in result]
    if not parts and result.get("measured"):
        parts.append(table(["measured so far"], [(cell(m),) for m in result["measured"]]))
    return "\n\n".join(parts) or "nothing measured"


def models(result: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in result.items() if isinstance(v, dict) and k != "error"]


SECTIONS: Mapping[str, Callable[[Mapping[str, Any]], str]] = MappingProxyType(
    {
        "versions": versions,
        "parity": parity,
        "precision": precision,
        "profile": profile,
        "curves": curves,
        "served": served,
    }
)
