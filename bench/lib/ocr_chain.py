"""A profile's OCR ops in this process, one page at a time, op by op.

A profile's config is its repo config with the profile's overrides, and
every op forced to one in-process instance (``instance_mode: thread``,
``instance_num: 1``, ``thread_num`` from the bench): a single-process loop,
not the served layout. Each op ("stage") runs with the same hooks the server
calls (``serving.batching.direct.run_op_direct``); the stages of all profiles
take turns page by page (:func:`run_profiles`).

A stage is identified by its op's config section, its runner and everything
upstream of it, so profiles that share a prefix (e.g. the same det under
two rec variants) reuse its outputs and timings instead of running it again:
in a one-page-at-a-time loop a page's time is the sum of its stages' times.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.lib.configs import apply_overrides, load_yaml, repo_config_path, write_config
from bench.lib.inprocess import load_op
from bench.lib.precision_profiles import Profile
from bench.lib.script import BenchError

log = logging.getLogger(__name__)

#: op name, loaded op, precision -> a runner (the bench's OpenVINO Runtime runners)
RuntimeRunnerFactory = Callable[[str, Any, str], Any]


def profile_config(profile: Profile, threads: int) -> dict:
    """The profile's config as a dict: its overrides, one in-process instance per op."""
    path = profile.config if os.path.isfile(profile.config) else repo_config_path(profile.config)
    single = {"instance_mode": "thread", "instance_num": 1, "thread_num": threads}
    return apply_overrides(load_yaml(path), ops=profile.ops, all_ops=single, params=profile.params)


def chain_order(config: Mapping[str, Any]) -> list[str]:
    """The ops of a linear graph, source first (a bench runs chains only)."""
    ops = config.get("op") or {}
    order = [name for name, conf in ops.items() if not conf.get("input_ops")]
    if len(order) != 1:
        raise BenchError(f"not a linear chain of ops: {sorted(ops)}")
    while len(order) < len(ops):
        after = [n for n, c in ops.items() if list(c.get("input_ops") or []) == [order[-1]]]
        if len(after) != 1:
            raise BenchError(f"not a linear chain of ops: {sorted(ops)}")
        order.append(after[0])
    return order


@dataclass(frozen=True)
class Stage:
    op: str
    key: str  # identity: op section, runner, upstream
    runtime: str | None  # None: the runner the config describes


def images_digest(images: Sequence[Any]) -> str:
    """A fingerprint of the pages (shapes and pixels): part of every stage's identity."""
    import numpy as np

    digest = hashlib.sha1()
    for image in images:
        array = np.ascontiguousarray(image)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def plan_stages(
    profile: Profile, config: Mapping[str, Any], runtime_tags: Mapping[str, str], pages: str = ""
) -> list[Stage]:
    """The profile's stages on the pages fingerprinted ``pages``; ``runtime_tags``
    names what a runtime precision's models depend on (e.g. int8 calibration),
    so it is part of the identity."""
    unknown = sorted(set(profile.runtime) - set(config["op"]))
    if unknown:
        raise BenchError(f"profile {profile.name}: runtime set for ops {unknown} that {profile.config} lacks")
    stages: list[Stage] = []
    upstream = pages
    for name in chain_order(config):
        runtime = profile.runtime.get(name)
        ident = json.dumps(
            [upstream, name, config["op"][name], runtime, runtime_tags.get(runtime or "", "")],
            sort_keys=True,
            default=str,
        )
        upstream = hashlib.sha1(ident.encode()).hexdigest()[:16]
        stages.append(Stage(name, upstream, runtime))
    return stages


@dataclass
class StageResult:
    outputs: list[Any]  # the op's merged output per page
    seconds: list[float] = field(default_factory=list)  # per page, the op's hooks and predictor calls

    @property
    def ms_per_page(self) -> float:
        return 1000.0 * sum(self.seconds) / max(1, len(self.seconds))


def build_op_and_runner(
    config: Mapping[str, Any], stage: Stage, runtime_runner: RuntimeRunnerFactory | None
) -> tuple[Any, Any]:
    from serving.batching.launch import runners_for

    op = load_op(write_config(config, tag="precision"), stage.op)
    if stage.runtime is None:
        return op, runners_for(op, 1)[0]
    if runtime_runner is None:
        raise BenchError(f"op {stage.op}: no runner for runtime {stage.runtime}")
    return op, runtime_runner(stage.op, op, stage.runtime)


@dataclass
class _Live:
    """A stage being measured: its op and runner, and where its input comes from."""

    stage: Stage
    parent: str | None  # the upstream stage's key (None: fed by the page itself)
    parent_op: str
    op: Any
    runner: Any


def _one_page(live: Mapping[str, _Live], memo: Mapping[str, StageResult], image: Any, i: int) -> dict[str, tuple]:
    """Page ``i`` through every live stage, upstream first: key -> (output, seconds)."""
    from serving.batching.direct import run_op_direct

    done: dict[str, tuple] = {}
    for key, entry in live.items():
        if entry.parent is None:
            inputs: dict[str, Any] = {"input": image}
        else:
            upstream = done[entry.parent][0] if entry.parent in done else memo[entry.parent].outputs[i]
            inputs = {entry.parent_op: upstream}
        batch = entry.op.conf.local_service_conf.max_batch_size
        started = time.perf_counter()
        output = run_op_direct(entry.op, entry.runner, inputs, max_batch_size=batch)
        done[key] = (output, time.perf_counter() - started)
    return done


def run_profiles(
    profiles: Sequence[Profile],
    images: Sequence[Any],
    *,
    threads: int,
    warm: int,
    memo: dict[str, StageResult],
    runtime_runner: Callable[[Profile], RuntimeRunnerFactory] | None = None,
    runtime_tags: Mapping[str, str] | None = None,
    stop_before: str | None = None,
    on_error: Callable[[Profile, Exception], None] | None = None,
) -> dict[str, list[tuple[str, StageResult]]]:
    """Each profile's stages as (op name, result), reusing ``memo``'s and adding the new ones.

    The new stages of all profiles are interleaved page by page (page i goes
    through every one of them before page i + 1), so a change in the
    machine's load falls on every profile alike; the first ``warm`` pages go
    through them once untimed first. ``stop_before`` an op: only the stages
    upstream of it. A profile whose stages cannot be built (e.g. quantization
    fails) goes to ``on_error`` and is left out, or raises without it.
    """
    digest = images_digest(images)
    plans: dict[str, list[Stage]] = {}
    live: dict[str, _Live] = {}  # insertion order puts upstream stages first
    try:
        for profile in profiles:
            config = profile_config(profile, threads)
            stages = plan_stages(profile, config, runtime_tags or {}, digest)
            names = [s.op for s in stages]
            stages = stages[: names.index(stop_before)] if stop_before in names else stages
            factory = runtime_runner(profile) if runtime_runner else None
            built: list[str] = []
            try:
                parent, parent_op = None, ""
                for stage in stages:
                    if stage.key not in memo and stage.key not in live:
                        op, runner = build_op_and_runner(config, stage, factory)
                        live[stage.key] = _Live(stage, parent, parent_op, op, runner)
                        built.append(stage.key)
                    parent, parent_op = stage.key, stage.op
            except Exception as exc:
                for key in built:
                    live.pop(key).runner.close()
                if on_error is None:
                    raise
                on_error(profile, exc)
                continue
            plans[profile.name] = stages
        for i, image in enumerate(images[:warm]):
            _one_page(live, memo, image, i)
        results = {key: StageResult([]) for key in live}
        for i, image in enumerate(images):
            for key, (output, seconds) in _one_page(live, memo, image, i).items():
                results[key].outputs.append(output)
                results[key].seconds.append(seconds)
    finally:
        for entry in live.values():
            entry.runner.close()
    memo.update(results)
    for key, entry in live.items():
        log.info("stage %s (%s): %.0f ms/page", entry.stage.op, key, results[key].ms_per_page)
    return {name: [(s.op, memo[s.key]) for s in stages] for name, stages in plans.items()}


def run_profile(
    profile: Profile,
    images: Sequence[Any],
    *,
    threads: int,
    warm: int,
    memo: dict[str, StageResult],
    runtime_runner: RuntimeRunnerFactory | None = None,
    runtime_tags: Mapping[str, str] | None = None,
    stop_before: str | None = None,
) -> list[tuple[str, StageResult]]:
    """:func:`run_profiles` for one profile."""
    factory = (lambda _profile: runtime_runner) if runtime_runner else None
    return run_profiles(
        [profile],
        images,
        threads=threads,
        warm=warm,
        memo=memo,
        runtime_runner=factory,
        runtime_tags=runtime_tags,
        stop_before=stop_before,
    )[profile.name]


def stage_inputs(images: Sequence[Any], upstream: Sequence[tuple[str, StageResult]]) -> list[dict[str, Any]]:
    """The inputs of the op after ``upstream`` (the request's own for a source op)."""
    if not upstream:
        return [{"input": image} for image in images]
    name, result = upstream[-1]
    return [{name: value} for value in result.outputs]
