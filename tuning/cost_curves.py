"""What ``batchline tune`` measures on this machine: each op's items made from
the user's own inputs (run through the pipeline's upstream ops, as the server
would), and each candidate instance layout's cost curve ``run(n)`` on the
real predictors, with all of the layout's instances running at once.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from serving.batching.execute import run_batch
from serving.batching.launch import make_op, runners_for
from serving.batching.units import batch_units
from serving.config.engines import foreign_keys
from serving.config.load import parse_config
from serving.config.schema import ServingConfig
from serving.op import Op, Runner
from serving.runners.cpu_plan import CpuAllocator, available_cpus
from serving.runners.process_memory import peak_rss_bytes, reset_peak, rss_bytes
from serving.service.decode import decode_image

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layout:
    """How an op's instances use the machine: ``instances`` x ``threads`` on ``engine``."""

    instances: int
    threads: int
    engine: str

    def __str__(self) -> str:
        return f"{self.instances} x {self.threads} thread{'s' if self.threads > 1 else ''} ({self.engine})"


@dataclass
class OpItems:
    """One op's preprocessed items from the user's inputs, and how many each request made."""

    items: list[Any] = field(default_factory=list)
    per_request: list[int] = field(default_factory=list)

    @property
    def mean_per_request(self) -> float:
        return statistics.fmean(self.per_request) if self.per_request else 1.0


@dataclass
class Curve:
    """A layout's measured dispatch time per batch size (median, s) and its spread
    (sigma of log run time around the median, pooled over sizes); for ops that
    size their items (``pad_unit``), the memory a batch takes per padded unit."""

    layout: Layout
    points: dict[int, float]
    jitter: float
    bytes_per_unit: float | None = None


def layouts(config: ServingConfig, op_name: str, engines: Sequence[str], cores: int | None = None) -> list[Layout]:
    """The candidate layouts of an op: every ``instances x threads`` that uses all
    of this process's cores, on each engine; the configured layout always included."""
    cores = cores or len(available_cpus())
    svc = config.op[op_name].local_service_conf
    found = {Layout(svc.instance_num, svc.thread_num, svc.engine)}
    for engine in engines:
        for instances in range(1, cores + 1):
            if cores % instances == 0:
                found.add(Layout(instances, cores // instances, engine))
    return sorted(found, key=lambda lay: (lay.engine != svc.engine, lay.instances, lay.threads))


def variant(data: dict[str, Any], source: str, path: str, changes: dict[str, dict[str, Any]]) -> ServingConfig:
    """The config ``data`` with ``changes[op]`` merged into each op's
    ``local_service_conf``, validated as a file would be."""
    changed = copy.deepcopy(data)
    for op_name, keys in changes.items():
        svc = changed["op"][op_name].setdefault("local_service_conf", {}) or {}
        svc.update(keys)
        changed["op"][op_name]["local_service_conf"] = svc
    return parse_config(changed, source, path)


def layout_changes(layout: Layout) -> dict[str, Any]:
    changes: dict[str, Any] = {"instance_num": layout.instances, "thread_num": layout.threads, "engine": layout.engine}
    for key, owner in foreign_keys(layout.engine).items():  # another engine's setting: back to its default
        changes[key] = owner.own_keys[key]
    return changes


def read_values(config: ServingConfig, files: Sequence[str], texts: Sequence[str]) -> list[Any]:
    """Request values as the HTTP layer hands them to the pipeline: decoded images, or text lines."""
    values: list[Any] = []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        try:
            values.append(decode_image(data, max_pixels=config.max_image_pixels))
        except Exception as exc:  # noqa: BLE001 - one unreadable file is skipped, as the server would refuse it
            log.warning("skipping %s: %s", path, exc)
    values += [t for t in texts if t.strip()]
    return values


class LoadedOp:
    """An op of ``config`` with its runners (one per instance), closed on exit."""

    def __init__(self, config: ServingConfig, op_name: str, cpus: CpuAllocator | None = None):
        self.conf = config.op[op_name]
        self.op: Op = make_op(self.conf)
        self.op.load()
        svc = self.conf.local_service_conf
        self._cpus = cpus or CpuAllocator()
        self._sets = self._cpus.allocate(svc)
        self.runners: list[Runner] = runners_for(self.op, svc.instance_num, self._sets)
        self.run_sizes = svc.predictor_batch_sizes

    def warm(self) -> None:
        """The server's warm-up (serving.batching.warmup): every warm-up shape once per
        instance and the first at every predictor batch size, so first-shape costs
        (kernel compilation for a new input size) stay out of the measurements."""
        warmup = list(self.op.warmup_items())
        for runner in self.runners:
            for item in warmup:
                self.run(runner, [item])
            for size in self.run_sizes if warmup else []:
                self.run(runner, [warmup[0]] * size)

    def units(self, items: Sequence[Any]) -> int:
        """Padded units of ``items`` as one batch (``max_batch_units`` counts them so)."""
        return batch_units(self.op.pad_extent(item) for item in items)

    def run(self, runner: Runner, items: Sequence[Any]) -> list[Any]:
        outputs, _ = run_batch(self.op, runner, items, self.run_sizes)
        return outputs

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
        self._cpus.release(self._sets)

    def __enter__(self) -> LoadedOp:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def collect_items(config: ServingConfig, values: Sequence[Any]) -> dict[str, OpItems]:
    """Every op's items for ``values``, each request run through the ops in DAG
    order with the config's own settings (one instance each)."""
    dag = config.dag_graph
    found = {name: OpItems() for name in dag.order}
    loaded = {}
    try:
        for name in dag.order:
            loaded[name] = LoadedOp(config, name)
        for index, value in enumerate(values):
            outputs: dict[str, Any] = {}
            try:
                for name in dag.order:
                    stage = loaded[name]
                    sources = dag.inputs(name)
                    inputs = {"input": value} if not sources else {s: outputs[s] for s in sources}
                    items = [stage.op.preprocess(p) for p in stage.op.expand(inputs)]
                    raw = stage.run(stage.runners[0], items) if items else []
                    results = [stage.op.postprocess(i, o) for i, o in zip(items, raw)]
                    outputs[name] = stage.op.merge(inputs, results)
                    found[name].items += items
                    found[name].per_request.append(len(items))
            except Exception as exc:  # noqa: BLE001 - a bad input is skipped, as the server would fail it alone
                log.warning("input %d skipped: %s", index, exc)
    finally:
        for stage in loaded.values():
            stage.close()
    return found


def measure_curves(
    configs: Sequence[tuple[Layout, ServingConfig]],
    op_name: str,
    items: Sequence[Any],
    sizes: Sequence[int],
    *,
    reps: int = 5,
    stop_s: float = float("inf"),
    until: float = float("inf"),
    seed: int = 0,
    progress: Callable[[str], None] = lambda message: None,
) -> list[Curve]:
    """Dispatch time per batch size on each layout (each with its own config),
    all of a layout's instances running batches at once (their contention is in
    the numbers). Batches are random draws of the user's items, as the batcher
    mixes requests.

    Every layout is loaded at once and measured size by size in turn, the order
    alternating, then again largest size first, each size keeping the lower of
    its two medians: load from elsewhere on the machine falls on every layout
    alike and is mostly filtered out, so layouts compare fairly. Sizes past one
    whose time exceeds ``stop_s``, or once ``time.monotonic()`` passes
    ``until``, are not measured (at least two sizes are, for a slope)."""
    started = time.monotonic()
    rng = random.Random(seed)
    with contextlib.ExitStack() as stack:
        stages = {layout: stack.enter_context(LoadedOp(config, op_name)) for layout, config in configs}
        memory: dict[Layout, list[tuple[int, int]]] = {}
        for layout, stage in stages.items():
            progress(f"{op_name} {layout}: warming")
            stage.warm()
            if stage.op.pad_unit is not None:
                memory[layout] = _memory_probe(stage, items, sorted(set(sizes)), rng)
            for runner in stage.runners:  # and the user's own shapes once
                stage.run(runner, list(items[: max(sizes)]))
        runs: dict[Layout, dict[int, list[float]]] = {layout: {} for layout in stages}
        active = list(stages)
        for turn, n in enumerate(sorted(set(sizes))):
            for layout in active if turn % 2 == 0 else reversed(active):
                progress(f"{op_name} {layout}: batches of {n}")
                runs[layout][n] = _concurrent_runs(stages[layout], _draws(stages[layout], items, n, reps, rng))
            active = [lay for lay in active if len(runs[lay]) < 2 or statistics.median(runs[lay][n]) <= stop_s]
            if not active or time.monotonic() > until:
                break
        for n in sorted({n for sizes_run in runs.values() for n in sizes_run}, reverse=True):
            if time.monotonic() > until + 0.5 * (until - started):
                break
            for layout in [lay for lay in stages if n in runs[lay]]:
                progress(f"{op_name} {layout}: batches of {n}, again")
                again = _concurrent_runs(stages[layout], _draws(stages[layout], items, n, reps, rng))
                if statistics.median(again) < statistics.median(runs[layout][n]):
                    runs[layout][n] = again
    return [_curve(layout, runs[layout], memory.get(layout, [])) for layout in stages]


def _curve(layout: Layout, runs: dict[int, list[float]], memory: list[tuple[int, int]]) -> Curve:
    points = {n: statistics.median(times) for n, times in runs.items()}
    logs = [_log_ratio(t, points[n]) for n, times in runs.items() for t in times]
    jitter = statistics.pstdev(logs) if len(logs) > 1 else 0.0
    return Curve(layout, points, jitter, _slope(memory))


def _memory_probe(
    stage: LoadedOp, items: Sequence[Any], sizes: Sequence[int], rng: random.Random
) -> list[tuple[int, int]]:
    """(padded units, peak resident memory above the warm baseline) of a batch of
    each size, smallest first, on one instance alone: each larger batch raises the
    peak by what its larger buffers take (allocators keep what earlier ones took,
    hence one baseline and ascending sizes)."""
    runner = stage.runners[0]
    pid = getattr(runner, "pid", None) or os.getpid()
    baseline = rss_bytes(pid) or 0
    found = []
    for n in sizes:
        batch = max((rng.choices(items, k=n) for _ in range(3)), key=stage.units)
        reset_peak(pid)
        stage.run(runner, batch)
        found.append((stage.units(batch), max(0, (peak_rss_bytes(pid) or 0) - baseline)))
    return found


def _slope(points: list[tuple[int, int]]) -> float | None:
    """Least-squares bytes per unit through the origin (None: nothing measured)."""
    den = sum(u * u for u, _ in points)
    if not points or den == 0:
        return None
    return max(0.0, sum(u * b for u, b in points) / den)


def _draws(stage: LoadedOp, items: Sequence[Any], n: int, reps: int, rng: random.Random) -> list[list[list[Any]]]:
    """``reps`` random batches of ``n`` of the user's items for each instance."""
    return [[rng.choices(items, k=n) for _ in range(reps)] for _ in stage.runners]


def _log_ratio(t: float, median: float) -> float:
    return math.log(max(t, 1e-9) / max(median, 1e-9))


def _concurrent_runs(stage: LoadedOp, batches: list[list[list[Any]]]) -> list[float]:
    """Run each instance's batches on its own thread at once; every run's duration."""

    def work(runner: Runner, mine: list[list[Any]]) -> list[float]:
        times = []
        for batch in mine:
            began = time.perf_counter()
            stage.run(runner, batch)
            times.append(time.perf_counter() - began)
        return times

    # one thread per instance, all at once; map re-raises a worker's error here once all are done
    with ThreadPoolExecutor(max_workers=max(1, len(stage.runners))) as pool:
        return [t for times in pool.map(work, stage.runners, batches) for t in times]
