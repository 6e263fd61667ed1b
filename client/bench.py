"""``batchline bench``: load-test a pipeline at several load levels.

    batchline bench --url http://127.0.0.1:9999 --pipeline ocr --inputs imgs/ \\
        --concurrency 1,4,16 --duration 20 --warmup 3 --json on.json --label batching-on
    batchline bench --plot cmp.png --from on.json off.json

Closed loop by default (``--concurrency`` client threads sending back to back);
open loop with ``--rate R[,R2...]`` (Poisson arrivals, ``--max-in-flight``
workers, arrivals beyond that are dropped client-side and reported). Requests
cycle through the inputs, one input per request; image payloads are encoded
once up front so the client spends its CPU on sending, not on base64.

Around every level ``/metrics`` is scraped, giving per-op mean batch size,
queue wait and padding ratio for that level alone. ``--json`` saves the
results; ``--plot`` draws throughput and p99 latency against the load knob,
overlaying any ``--from`` result files.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from .cli import TOKEN_HELP, expand_images, resolve_token
from .loadgen import LevelResult, run_closed_loop, run_open_loop
from .pipeline_client import PipelineClient, PipelineError, make_payload
from .stats import MetricsSnapshot, format_errors, op_stats

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="server base URL (omit with --from to only plot)")
    parser.add_argument("--pipeline", default="ocr", help="pipeline name (default: ocr)")
    parser.add_argument("--inputs", action="append", default=[], metavar="DIR|GLOB", help="images to send (repeatable)")
    parser.add_argument("--text-file", help="text inputs, one per line")
    parser.add_argument(
        "--concurrency", default="1,4,16,32", help="closed-loop levels, comma separated (default: 1,4,16,32)"
    )
    parser.add_argument("--rate", help="open-loop levels in requests/s, comma separated")
    parser.add_argument(
        "--max-in-flight", type=int, default=64, help="open loop: worker threads; busier arrivals are dropped"
    )
    parser.add_argument("--seed", type=int, default=0, help="open loop: arrival RNG seed")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per level")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds not counted per level")
    parser.add_argument("--max-requests", type=int, help="stop a level after N measured requests")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--protocol", choices=("paddle", "native"), default="paddle")
    parser.add_argument("--priority", type=int, help="priority field sent with each request")
    parser.add_argument("--label", help="name of this run in tables, JSON and plots")
    parser.add_argument("--json", metavar="OUT", help="write results as JSON")
    parser.add_argument("--plot", metavar="OUT.png", help="plot qps and p99 vs load")
    parser.add_argument(
        "--from",
        dest="from_files",
        nargs="+",
        default=[],
        metavar="RESULT.json",
        help="earlier --json results to overlay on --plot",
    )
    parser.add_argument(
        "--progress", action="store_true", help="show the progress line even when stderr is not a terminal"
    )


def _levels(text: str, kind: Callable[[str], Any]) -> list[Any]:
    values = [kind(v) for v in text.split(",") if v.strip()]
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"levels must be positive numbers, got {text!r}")
    return values


def load_payloads(
    image_specs: list[str], text_file: str | None, protocol: str, priority: int | None = None
) -> list[dict[str, Any]]:
    """One ready JSON body per input (images first, then text lines)."""
    inputs = []
    for path in expand_images(image_specs):
        with open(path, "rb") as f:
            inputs.append(("image", f.read()))
    if text_file:
        with open(text_file, encoding="utf-8") as f:
            inputs.extend(("text", line.rstrip("\n")) for line in f if line.strip())
    return [make_payload([inp], protocol=protocol, priority=priority) for inp in inputs]


def scrape(client: PipelineClient) -> MetricsSnapshot | None:
    """A ``/metrics`` snapshot, or None (logged) when the server has none."""
    try:
        return MetricsSnapshot.from_text(client.metrics_text())
    except (PipelineError, ValueError) as e:
        log.warning("cannot scrape /metrics: %s", e)
        return None


class _ProgressLine:
    """``\\r``-overwritten status line on a stream."""

    def __init__(self, stream: TextIO, level: str):
        self.stream, self.level = stream, level

    def __call__(self, p: dict[str, Any]) -> None:
        self.stream.write(
            f"\r[{self.level}] {p['phase']} {p['elapsed_s']:6.1f}s  ok={p['ok']}"
            f" failed={p['failed']} dropped={p['dropped']}   "
        )
        self.stream.flush()

    def done(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def run_levels(args: argparse.Namespace, err: TextIO) -> list[LevelResult]:
    payloads = load_payloads(args.inputs, args.text_file, args.protocol, args.priority)
    if not payloads:
        raise ValueError("no inputs: give --inputs DIR|GLOB and/or --text-file F")
    name, protocol = args.pipeline, args.protocol
    label = args.label or name
    token = resolve_token(args.token, err)

    def factory() -> PipelineClient:
        return PipelineClient(args.url, timeout=args.timeout, token=token, pool_size=2)

    def make_request(client: PipelineClient, i: int) -> None:
        client.predict_raw(name, payloads[i % len(payloads)], protocol=protocol)

    show = args.progress or err.isatty()
    open_loop = bool(args.rate)
    knobs = _levels(args.rate, float) if open_loop else _levels(args.concurrency, int)
    results: list[LevelResult] = []
    with factory() as admin:
        for knob in knobs:
            level = f"rate={knob:g}/s" if open_loop else f"c={knob}"
            progress = _ProgressLine(err, level) if show else None
            before = scrape(admin)
            common = dict(
                duration_s=args.duration, warmup_s=args.warmup, max_requests=args.max_requests, progress=progress
            )
            if open_loop:
                res = run_open_loop(
                    factory, make_request, knob, seed=args.seed, max_in_flight=args.max_in_flight, **common
                )
            else:
                res = run_closed_loop(factory, make_request, knob, **common)
            if progress:
                progress.done()
            after = scrape(admin)
            if before is not None and after is not None:
                res.op_stats = op_stats(before, after)
            res.label = label
            results.append(res)
            if res.interrupted:
                err.write("interrupted\n")
                break
    return results


def _fmt(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def format_table(levels: list[dict[str, Any]]) -> str:
    """The results table (from :meth:`LevelResult.to_dict` dicts) with op stats under each level."""
    head = f"{'level':>12} {'requests':>9} {'qps':>9} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9}  errors"
    lines = [head, "-" * len(head)]
    for lv in levels:
        knob = f"{lv['rate']:g}/s" if lv["mode"] == "open" else f"c={lv['concurrency']}"
        lat = lv["latency_ms"]
        lines.append(
            f"{knob:>12} {lv['requests']:>9} {lv['qps']:>9.2f} {_fmt(lat.get('p50')):>9} "
            f"{_fmt(lat.get('p90')):>9} {_fmt(lat.get('p99')):>9}  "
            f"{format_errors(lv['errors'], lv.get('dropped', 0))}"
        )
        for op, s in lv.get("op_stats", {}).items():
            lines.append(
                f"{'':>12}   op {op}: batch {_fmt(s.get('mean_batch_size'), '.2f')}"
                f"  rows/call {_fmt(s.get('mean_call_rows'), '.2f')}"
                f"  queue wait {_fmt(s.get('mean_queue_wait_ms'))} ms"
                f"  run {_fmt(s.get('mean_run_ms'))} ms"
                f"  padding {_fmt(_pct(s.get('padding_ratio')))}%"
            )
    return "\n".join(lines)


def _pct(x: float | None) -> float | None:
    return None if x is None else x * 100.0


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def results_document(args: argparse.Namespace, results: list[LevelResult]) -> dict[str, Any]:
    return _json_safe(
        {
            "label": args.label or args.pipeline,
            "url": args.url,
            "pipeline": args.pipeline,
            "protocol": args.protocol,
            "mode": "open" if args.rate else "closed",
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "levels": [r.to_dict() for r in results],
        }
    )


def plot_runs(runs: list[dict[str, Any]], out_path: str) -> None:
    """Throughput and p99 latency vs concurrency (or rate), one line per run document."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.5))
    FigureCanvasAgg(fig)
    ax_qps, ax_p99 = fig.subplots(1, 2)
    xlabels, all_x = set(), set()
    for run in runs:
        levels = run.get("levels", [])
        if not levels:
            continue
        open_loop = run.get("mode") == "open"
        xlabels.add("offered rate (req/s)" if open_loop else "concurrency")
        xs = [lv["rate"] if open_loop else lv["concurrency"] for lv in levels]
        qps = [lv["qps"] for lv in levels]
        p99 = [(lv.get("latency_ms") or {}).get("p99") for lv in levels]
        p99 = [math.nan if v is None else v for v in p99]
        all_x.update(x for x in xs if x)
        label = run.get("label") or "run"
        ax_qps.plot(xs, qps, marker="o", label=label)
        ax_p99.plot(xs, p99, marker="o", label=label)
    xlabel = " / ".join(sorted(xlabels)) or "load"
    ax_qps.set(title="throughput", xlabel=xlabel, ylabel="successful requests/s")
    ax_p99.set(title="p99 latency", xlabel=xlabel, ylabel="ms")
    for ax in (ax_qps, ax_p99):
        if len(all_x) > 2 and max(all_x) / min(all_x) >= 8:  # 1,4,16,32: spread them evenly
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(all_x), [f"{x:g}" for x in sorted(all_x)])
            ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.legend()
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)


def load_runs(paths: list[str]) -> list[dict[str, Any]]:
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not doc.get("label"):
            doc["label"] = os.path.splitext(os.path.basename(path))[0]
        runs.append(doc)
    return runs


def main(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if not args.url and not args.from_files:
        err.write("error: give --url to run a benchmark, or --from FILES --plot OUT to plot\n")
        return 1
    runs: list[dict[str, Any]] = []
    try:
        runs = load_runs(args.from_files)
    except (OSError, ValueError) as e:
        err.write(f"error: cannot read --from file: {e}\n")
        return 1
    status = 0
    if args.url:
        try:
            results = run_levels(args, err)
        except (OSError, ValueError) as e:
            err.write(f"error: {e}\n")
            return 1
        doc = results_document(args, results)
        out.write(f"== {doc['label']}: {args.pipeline} at {args.url}\n")
        out.write(format_table(doc["levels"]) + "\n")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=2, ensure_ascii=False)
        runs.append(doc)
        if results and all(r.ok == 0 for r in results):
            err.write("error: no request succeeded\n")
            status = 1
    else:
        for doc in runs:
            out.write(f"== {doc['label']}\n{format_table(doc.get('levels', []))}\n")
    if args.plot:
        plot_runs(runs, args.plot)
        err.write(f"wrote {args.plot}\n")
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchline bench", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
