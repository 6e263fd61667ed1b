"""Tune an op's batching and instance layout on this machine for a p99 budget.

    batchline tune configs/rec.yml --p99-ms 200 --inputs 'crops/*.png' -o rec.tuned.yml
    batchline tune configs/ocr.yml --p99-ms 2000 --inputs 'pages/*.png' --budget-s 300

1. Measure: the user's inputs run through the pipeline's ops (so each op gets
   items like the ones it will serve), then each op's cost curve ``run(n)`` on
   each candidate layout (``instance_num x thread_num`` filling the cores, per
   ``--engines``), all instances running at once.
2. Recommend: per op, the ``max_batch_size``, ``max_queue_delay`` and layout
   whose highest rate with a simulated p99 (the real batcher on the measured
   curve) within the op's share of the budget is highest.
3. Write the tuned config (the user's file with each changed key commented).
4. Verify: both configs served, the bundled bench's closed loop on each in
   turn, before/after throughput and p99 side by side. The bench sends the
   user's inputs: a config tuned on the ops' warm-up items (no ``--inputs`` or
   ``--text-file``) is written but not verified, and the exit status says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from serving.config.engines import ENGINE_NAMES, foreign_keys
from serving.config.errors import ConfigError
from serving.config.load import load_config, parse_config, read_config
from serving.config.schema import LocalServiceConf, ServingConfig
from tuning.cost_curves import (
    Curve,
    Layout,
    OpItems,
    collect_items,
    layout_changes,
    layouts,
    measure_curves,
    read_values,
    variant,
)
from tuning.recommend import Option, Prediction, options, recommend
from tuning.simulate import Settings, measured_cost
from tuning.tuned_config import Change, tuned_text

log = logging.getLogger(__name__)

#: share of --budget-s for measuring cost curves (the rest: simulation and verification)
MEASURE_SHARE = 0.5
#: why a config tuned on the ops' warm-up items is not benched
NOT_VERIFIABLE = (
    "the tuning ran on the ops' warm-up items, and the verification bench needs requests like yours; "
    "tune again with --inputs DIR|GLOB or --text-file F to verify, or pass --no-verify to accept the config unverified"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="the config.yml to tune (path or pkg://package/file.yml)")
    parser.add_argument("--p99-ms", type=float, required=True, help="the latency budget of a request, p99, in ms")
    parser.add_argument("--op", action="append", default=[], help="tune only this op (repeatable; default: all)")
    parser.add_argument(
        "--inputs", action="append", default=[], metavar="DIR|GLOB", help="images like yours (repeatable)"
    )
    parser.add_argument("--text-file", help="text inputs like yours, one per line")
    parser.add_argument("-o", "--output", help="the tuned config to write (default: <name>.tuned.yml here)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="time for the whole run (default 240 s)")
    parser.add_argument(
        "--engines", help=f"engines to try, comma separated ({', '.join(ENGINE_NAMES)}; default: each op's own)"
    )
    parser.add_argument(
        "--memory-mb",
        type=float,
        help="host memory (peak RSS) one instance's batch may take: sets max_batch_units "
        "from the measured memory per padded unit, for ops that size their items",
    )
    parser.add_argument("--no-verify", action="store_true", help="write the tuned config without benchmarking it")
    parser.add_argument(
        "--concurrency", type=int, help="verification: closed-loop clients (default: from the prediction)"
    )
    parser.add_argument("--json", metavar="OUT", help="write the measurements, predictions and verification here")


@dataclass
class OpPlan:
    """One op's measurements and recommendation."""

    name: str
    budget_ms: float
    curves: list[Curve]
    per_request: list[int]
    best: Prediction
    current: Prediction
    best_layout: Layout
    current_layout: Layout


def main(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    started = time.monotonic()
    if args.p99_ms <= 0 or args.budget_s <= 0:
        console.print("[red]--p99-ms and --budget-s must be positive")
        return 2
    try:
        source, data = read_config(args.config)
        config = parse_config(data, args.config, source)
    except ConfigError as exc:
        console.print(f"[red]{exc}")
        return 2
    unknown = [o for o in args.op if o not in config.op]
    if unknown:
        console.print(f"[red]no op {unknown[0]!r} in {args.config}; its ops: {', '.join(config.op)}")
        return 2
    tuned_ops = args.op or list(config.dag_graph.order)
    engines = [e.strip() for e in args.engines.split(",")] if args.engines else []
    out_path = args.output or f"{config.name}.tuned.yml"

    items, own_inputs = _items(config, args, console)
    measure_until = started + MEASURE_SHARE * args.budget_s
    with _progress(console) as progress:
        plans = _measure_all(config, data, source, args, tuned_ops, engines, items, measure_until, progress)
    _print_plans(console, plans)
    changes = _changes(config, plans, args.memory_mb)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(tuned_text(source, changes, os.path.dirname(os.path.abspath(out_path))))
    console.print(f"wrote {out_path} ({len(changes)} change{'s' if len(changes) != 1 else ''})")
    try:
        load_config(out_path)
    except ConfigError as exc:
        console.print(f"[red]the tuned config does not validate, so it is not verified: {exc}")
        return 1
    report: dict[str, Any] = {"config": args.config, "p99_ms": args.p99_ms, "ops": [_plan_json(p) for p in plans]}
    status = 0
    if not changes:
        console.print("the current settings are the best found: no change, nothing to verify")
    elif not args.no_verify and not own_inputs:
        # the bench sends requests, and warm-up items are op items, not requests: there is nothing to send
        console.print(f"[yellow]not verified: {NOT_VERIFIABLE}")
        report["verification"] = {"verified": False, "skipped": NOT_VERIFIABLE}
        status = 1
    elif not args.no_verify:
        from tuning.server import ServerFailed
        from tuning.verify import verify

        left = args.budget_s - (time.monotonic() - started)
        try:
            outcome = verify(
                source,
                out_path,
                config,
                args,
                concurrency=args.concurrency or _clients(plans),
                seconds=left,
                console=console,
            )
        except ServerFailed as exc:  # the tuned config is written; say why it is not verified, no traceback
            console.print(f"[red]not verified: {exc}")
            outcome = {"verified": False, "error": str(exc)}
        report["verification"] = outcome
        status = 0 if outcome["verified"] else 1
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return status


def _items(config: ServingConfig, args: argparse.Namespace, console: Console) -> tuple[dict[str, OpItems], bool]:
    """Each op's items, and whether they come from the user's inputs (False: the ops' warm-up items)."""
    from client.cli import expand_images

    files = expand_images(args.inputs) if args.inputs else []
    texts: list[str] = []
    if args.text_file:
        with open(args.text_file, encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f]
    values = read_values(config, files, texts)
    if not values:
        console.print(
            "[yellow]no --inputs or --text-file: tuning on each op's warm-up items, not on inputs like yours "
            "(so the tuned config cannot be verified)"
        )
        return {name: _warmup_items(config, name) for name in config.dag_graph.order}, False
    console.print(f"running {len(values)} inputs through the pipeline's ops")
    found = collect_items(config, values)
    for name, op_items in found.items():
        if not op_items.items:
            found[name] = _warmup_items(config, name)
    return found, True


def _warmup_items(config: ServingConfig, name: str) -> OpItems:
    from serving.batching.launch import make_op

    op = make_op(config.op[name])
    op.load()
    warm = list(op.warmup_items())
    return OpItems(items=warm, per_request=[1] * len(warm))


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console, transient=False
    )


def _sizes(config: ServingConfig, name: str) -> list[int]:
    current = config.op[name].local_service_conf.max_batch_size
    cap = max(2 * current, 32)
    return sorted({1 << k for k in range(cap.bit_length()) if 1 << k <= cap} | {current})


def _measure_all(
    config: ServingConfig,
    data: Any,
    source: str,
    args: argparse.Namespace,
    tuned_ops: Sequence[str],
    engines: Sequence[str],
    items: dict[str, OpItems],
    until: float,
    progress: Progress,
) -> list[OpPlan]:
    task = progress.add_task("measuring", total=len(tuned_ops))
    curves: dict[str, list[Curve]] = {}
    for done, name in enumerate(tuned_ops):
        share = max(2.0, (until - time.monotonic()) / (len(tuned_ops) - done))
        sizes = _sizes(config, name)
        candidates = layouts(config, name, engines or [config.op[name].local_service_conf.engine])
        # max_batch_size as large as the largest batch measured, so that its predictor calls are
        # made at the batch sizes the tuned config would allow, not split to the current maximum
        configs = [
            (
                layout,
                variant(data, args.config, source, {name: {**layout_changes(layout), "max_batch_size": max(sizes)}}),
            )
            for layout in candidates
            if _valid(data, args, source, name, layout, progress)
        ]
        curves[name] = measure_curves(
            configs,
            name,
            items[name].items,
            sizes,
            reps=5,
            stop_s=args.p99_ms / 2000,
            until=time.monotonic() + share,
            progress=lambda message: progress.update(task, description=f"measuring {message}"),
        )
        progress.advance(task)
    shares = _budget_shares(config, items, curves)
    return [_plan(config, name, args.p99_ms * shares[name], curves[name], items[name], progress) for name in tuned_ops]


def _valid(data: Any, args: argparse.Namespace, source: str, name: str, layout: Layout, progress: Progress) -> bool:
    """Whether the config with ``layout`` for op ``name`` is valid (an engine may refuse another's keys)."""
    try:
        variant(data, args.config, source, {name: layout_changes(layout)})
    except ConfigError as exc:
        progress.console.print(f"[yellow]skipping {name} on {layout}: {exc}")
        return False
    return True


def _budget_shares(
    config: ServingConfig, items: dict[str, OpItems], curves: dict[str, list[Curve]]
) -> dict[str, float]:
    """Each tuned op's share of the p99 budget: all of it for a pipeline of one
    op; else in proportion to the op's time per request at its current settings
    (items per request x time per item at its current max_batch_size). An op
    not measured (not tuned) counts as the mean of the measured ones. The
    verification bench is the judge."""
    if len(config.op) == 1:
        return {name: 1.0 for name in curves}
    weight: dict[str, float] = {}
    for name in config.op:
        svc = config.op[name].local_service_conf
        now = next(
            (c for c in curves.get(name, []) if c.layout == Layout(svc.instance_num, svc.thread_num, svc.engine)), None
        )
        if now is None:
            continue
        per_item = measured_cost(now.points)(svc.max_batch_size) / svc.max_batch_size
        weight[name] = items[name].mean_per_request * per_item
    known = sum(weight.values())
    untuned = [name for name in config.op if name not in weight]
    for name in untuned:
        weight[name] = known / max(1, len(weight))
    total = sum(weight.values()) or 1.0
    return {name: weight[name] / total for name in curves}


def layout_spreads(svc: LocalServiceConf, layout: Layout) -> bool:
    """Whether the server would spread batches over ``layout``'s instances: the
    config's own rule (``spreads_batches``) on the op's settings with that layout."""
    return dataclasses.replace(svc, **layout_changes(layout)).spreads_batches


def _plan(
    config: ServingConfig, name: str, budget_ms: float, curves: list[Curve], op_items: OpItems, progress: Progress
) -> OpPlan:
    svc = config.op[name].local_service_conf
    current_layout = Layout(svc.instance_num, svc.thread_num, svc.engine)
    by_layout = {c.layout: c for c in curves}
    layout_of = {str(c.layout): c.layout for c in curves}
    spread_of = {key: layout_spreads(svc, layout) for key, layout in layout_of.items()}  # validated once each
    fitted = [(str(c.layout), measured_cost(c.points), list(c.points), c.layout.instances, c.jitter) for c in curves]
    candidates = options(
        fitted,
        budget_ms=budget_ms,
        current_delay_ms=svc.max_queue_delay,
        policy=svc.batching_policy,
        spread=lambda layout, _instances: spread_of[layout],
    )
    now_curve = by_layout[current_layout]
    current = Option(
        str(current_layout),
        Settings(
            max_batch_size=svc.max_batch_size,
            max_queue_delay_ms=svc.max_queue_delay,
            preferred_batch_size=tuple(svc.preferred_batch_size),
            policy=svc.batching_policy,
            instances=svc.instance_num,
            spread=svc.spreads_batches,
        ),
        measured_cost(now_curve.points),
        now_curve.jitter,
    )
    task = progress.add_task(f"simulating {name}", total=len(candidates))
    best, now = recommend(
        candidates,
        current,
        op_items.per_request or [1],
        budget_ms,
        on_step=lambda done, total: progress.update(task, completed=done),
    )
    return OpPlan(
        name, budget_ms, curves, op_items.per_request, best, now, layout_of[best.option.layout], current_layout
    )


def _changes(config: ServingConfig, plans: list[OpPlan], memory_mb: float | None = None) -> list[Change]:
    changes = []
    for plan in plans:
        units = _units_budget(plan, memory_mb)
        svc_units = config.op[plan.name].local_service_conf.max_batch_units
        if units is not None and units != svc_units:
            per = _chosen_curve(plan).bytes_per_unit or 0.0
            why = f"was {svc_units}; {memory_mb:g} MiB at {per:.1f} bytes per padded unit (measured)"
            changes.append(Change(plan.name, "max_batch_units", units, why))
        svc = config.op[plan.name].local_service_conf
        s, lay = plan.best.option.settings, plan.best_layout
        why = _why(plan)
        wanted: dict[str, Any] = {
            "max_batch_size": s.max_batch_size,
            "max_queue_delay": _ms(s.max_queue_delay_ms),
            "instance_num": lay.instances,
            "thread_num": lay.threads,
            "engine": lay.engine,
        }
        for key in ("preferred_batch_size", "run_batch_sizes"):  # sizes past the new maximum are refused
            sizes = getattr(svc, key) or []
            if any(p > s.max_batch_size for p in sizes):
                wanted[key] = [p for p in sizes if p <= s.max_batch_size]
        for key, value in wanted.items():
            was = getattr(svc, key)
            if was != value:
                changes.append(Change(plan.name, key, value, f"was {_shown(was)}; {why}"))
        for key, owner in foreign_keys(lay.engine).items():
            if getattr(svc, key) != owner.own_keys[key]:
                changes.append(Change(plan.name, key, None, owner.setting_phrase))
    return changes


def _chosen_curve(plan: OpPlan) -> Curve:
    return next(c for c in plan.curves if c.layout == plan.best_layout)


def _units_budget(plan: OpPlan, memory_mb: float | None) -> int | None:
    """max_batch_units for ``memory_mb`` per instance, from the chosen layout's memory per unit."""
    per = _chosen_curve(plan).bytes_per_unit
    if memory_mb is None or not per:
        return None
    return max(1, int(memory_mb * (1 << 20) / per))


def _shown(value: Any) -> str:
    return str(_ms(value)) if isinstance(value, float) else str(value)


def _ms(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _why(plan: OpPlan) -> str:
    best, now = plan.best, plan.current
    p99 = best.at_max.p99_ms if best.at_max else math.nan
    return (
        f"up to {best.max_rps:.0f} req/s with p99 {p99:.0f} ms <= {plan.budget_ms:.0f} ms "
        f"(simulated; was {now.max_rps:.0f} req/s)"
    )


def _clients(plans: list[OpPlan]) -> int:
    """Closed-loop clients for the verification: Little's law at the predicted rate and mean latency."""
    rate = 1.0 / sum(1.0 / max(p.best.max_rps, 1e-9) for p in plans)
    mean_s = sum((p.best.at_max.mean_ms if p.best.at_max else 0.0) for p in plans) / 1000.0
    return max(2, min(64, math.ceil(rate * mean_s)))


def _print_plans(console: Console, plans: list[OpPlan]) -> None:
    for plan in plans:
        table = Table(title=f"op {plan.name}: p99 budget {plan.budget_ms:.0f} ms", title_justify="left")
        for column in ("", "layout", "batch", "delay ms", "req/s (sim.)", "p50/p99 ms"):
            table.add_column(column)
        for label, pred in (("now", plan.current), ("tuned", plan.best)):
            s, at = pred.option.settings, pred.at_max
            table.add_row(
                label,
                pred.option.layout,
                str(s.max_batch_size),
                f"{s.max_queue_delay_ms:g}",
                f"{pred.max_rps:.1f}",
                f"{at.p50_ms:.0f} / {at.p99_ms:.0f}" if at else "-",
            )
        console.print(table)
        curves = Table(title=f"op {plan.name}: measured run time per batch (ms)", title_justify="left")
        curves.add_column("layout")
        sizes = sorted({n for c in plan.curves for n in c.points})
        for n in sizes:
            curves.add_column(str(n))
        for c in plan.curves:
            curves.add_row(str(c.layout), *[f"{c.points[n] * 1000:.1f}" if n in c.points else "" for n in sizes])
        console.print(curves)
        per_unit = _chosen_curve(plan).bytes_per_unit
        if per_unit:
            console.print(
                f"  memory per padded unit: {per_unit:.1f} bytes, so max_batch_units "
                f"{int((1 << 30) / per_unit):,} per GiB a batch may take (--memory-mb sets it)"
            )
        if plan.per_request and max(plan.per_request) > 1:
            console.print(
                f"  items per request: mean {statistics.fmean(plan.per_request):.1f}, max {max(plan.per_request)}"
            )


def _plan_json(plan: OpPlan) -> dict[str, Any]:
    def pred(p: Prediction) -> dict[str, Any]:
        return {
            "layout": p.option.layout,
            "settings": p.option.settings.__dict__,
            "max_rps": p.max_rps,
            "at_max": p.at_max.as_dict() if p.at_max else None,
        }

    return {
        "op": plan.name,
        "budget_ms": plan.budget_ms,
        "curves": [
            {"layout": str(c.layout), "points_s": c.points, "jitter": c.jitter, "bytes_per_unit": c.bytes_per_unit}
            for c in plan.curves
        ],
        "current": pred(plan.current),
        "tuned": pred(plan.best),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchline tune", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
