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
queue wait and padding ratio for that level alone. While a level runs, a live
progress line shows it (on a terminal, or anywhere with ``--progress``); the
results are printed as tables at the end (``bench_progress``, ``bench_table``).
``--json`` saves the results; ``--plot`` draws throughput and p99 latency
against the load knob, overlaying any ``--from`` result files.
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

from .bench_progress import BenchProgress
from .bench_table import print_results
from .cli import PROTOCOL_HELP, RPC_URL_HELP, TOKEN_HELP, expand_images, protocol_problem, resolve_token, rpc_address
from .loadgen import LevelResult, run_closed_loop, run_open_loop
from .pipeline_client import PipelineClient, PipelineError
from .protocols import PROTOCOLS, prepare
from .stats import MetricsSnapshot, op_stats

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
    parser.add_argument("--protocol", choices=PROTOCOLS, default="paddle", help=PROTOCOL_HELP)
    parser.add_argument("--rpc-url", metavar="HOST:PORT", help=RPC_URL_HELP)
    parser.add_argument(
        "--priority",
        type=int,
        help="priority sent with each request (v2, v2-grpc: Triton's priority parameter, 1 = the highest)",
    )
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
        "--progress", action="store_true", help="show the live progress even when stderr is not a terminal"
    )


def _levels(text: str, kind: Callable[[str], Any]) -> list[Any]:
    values = [kind(v) for v in text.split(",") if v.strip()]
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"levels must be positive numbers, got {text!r}")
    return values


def load_payloads(
    image_specs: list[str], text_file: str | None, protocol: str, priority: int | None = None
) -> list[Any]:
    """One request per input (images first, then text lines), encoded once before the run
    (:func:`client.protocols.prepare`)."""
    inputs = []
    for path in expand_images(image_specs):
        with open(path, "rb") as f:
            inputs.append(("image", f.read()))
    if text_file:
        with open(text_file, encoding="utf-8") as f:
            inputs.extend(("text", line.rstrip("\n")) for line in f if line.strip())
    return [prepare([inp], protocol, priority=priority) for inp in inputs]


def scrape(client: PipelineClient) -> MetricsSnapshot | None:
    """A ``/metrics`` snapshot, or None (logged) when the server has none."""
    try:
        return MetricsSnapshot.from_text(client.metrics_text())
    except (PipelineError, ValueError) as e:
        log.warning("cannot scrape /metrics: %s", e)
        return None


def run_levels(args: argparse.Namespace, err: TextIO) -> list[LevelResult]:
    rpc_url = rpc_address(args.rpc_url, args.url)
    problem = protocol_problem(args.protocol, rpc_url)
    if problem:
        raise ValueError(problem)
    payloads = load_payloads(args.inputs, args.text_file, args.protocol, args.priority)
    if not payloads:
        raise ValueError("no inputs: give --inputs DIR|GLOB and/or --text-file F")
    name, protocol = args.pipeline, args.protocol
    label = args.label or name
    token = resolve_token(args.token)

    def factory() -> PipelineClient:
        return PipelineClient(args.url, timeout=args.timeout, token=token, pool_size=2, rpc_url=rpc_url)

    def make_request(client: PipelineClient, i: int) -> None:
        client.results(name, payloads[i % len(payloads)], protocol)

    show = args.progress or err.isatty()
    open_loop = bool(args.rate)
    knobs = _levels(args.rate, float) if open_loop else _levels(args.concurrency, int)
    results: list[LevelResult] = []
    with factory() as admin, BenchProgress(err, show=show, force=args.progress) as progress:
        for knob in knobs:
            level = f"rate={knob:g}/s" if open_loop else f"c={knob}"
            report = progress.level(level, args.warmup + args.duration)
            before = scrape(admin)
            common = dict(
                duration_s=args.duration, warmup_s=args.warmup, max_requests=args.max_requests, progress=report
            )
            if open_loop:
                res = run_open_loop(
                    factory, make_request, knob, seed=args.seed, max_in_flight=args.max_in_flight, **common
                )
            else:
                res = run_closed_loop(factory, make_request, knob, **common)
            if report:
                report.done()
            after = scrape(admin)
            if before is not None and after is not None:
                res.op_stats = op_stats(before, after)
            res.label = label
            results.append(res)
            if res.interrupted:
                break
    if results and results[-1].interrupted:  # said once the live progress has stopped drawing
        err.write("interrupted\n")
    return results


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
            "rpc_url": args.rpc_url,
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
        print_results(out, f"{doc['label']}: {args.pipeline} at {args.url}", doc["levels"])
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=2, ensure_ascii=False)
        runs.append(doc)
        if results and all(r.ok == 0 for r in results):
            err.write("error: no request succeeded\n")
            status = 1
    else:
        for doc in runs:
            print_results(out, doc["label"], doc.get("levels", []))
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
