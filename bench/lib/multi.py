"""Several pipelines in one server (a repository): repository directories
written from repo configs, several closed loops at once, their rounds pooled,
and what /metrics says about shared ops and shadow versions."""

from __future__ import annotations

import copy
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.lib.engines import engine_label
from bench.lib.paths import cache_dir
from bench.lib.script import BenchError

SHARED = "shared"  # the pipeline label of a shared stage's op metrics (serving.batching.metrics.SHARED)
SHADOW_OUTCOMES = ("agree", "disagree", "shadow_failed", "primary_failed", "dropped")


def without_share(config: Mapping[str, Any]) -> dict:
    """A deep copy of ``config`` with every op's ``share`` key removed: the same
    ops, each pipeline with stages of its own."""
    out = copy.deepcopy(dict(config))
    for op in (out.get("op") or {}).values():
        op.pop("share", None)
    return out


def write_repository(configs: Sequence[Mapping[str, Any]], tag: str = "repo") -> str:
    """A fresh temp directory holding one YAML per config (``<name>-v<version>.yml``,
    in the given order), for ``batchline serve DIR``."""
    import yaml

    folder = tempfile.mkdtemp(prefix=f"batchline-{tag}-", dir=cache_dir("repositories"))
    for i, config in enumerate(configs):
        base = f"{i:02d}-{config.get('name', 'pipeline')}-v{config.get('version', 1)}.yml"
        with open(os.path.join(folder, base), "w", encoding="utf-8") as f:
            yaml.safe_dump(dict(config), f, sort_keys=False, allow_unicode=True)
    return folder


def split_clients(total: int, parts: int) -> list[int]:
    """``total`` clients over ``parts`` loads as evenly as possible, the first ones
    taking the remainder; every part gets at least one."""
    if parts < 1 or total < parts:
        raise BenchError(f"{total} clients cannot feed {parts} pipelines (at least one each)")
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


@dataclass(frozen=True)
class Load:
    """One closed loop of a mixed load: ``clients`` clients sending to ``url``/``name``."""

    label: str  # e.g. the pipeline name; results are keyed by it
    url: str
    name: str
    payloads: Sequence[dict]
    clients: int


def concurrent_loops(loads: Sequence[Load], duration_s: float, warmup_s: float, timeout: float = 60.0) -> dict:
    """Run every load's closed loop at the same time (one thread each); returns
    ``{label: closed_loop result with raw latencies}``."""
    from bench.lib.measure import closed_loop

    results: dict[str, dict] = {}
    failures: list[BaseException] = []

    def run(load: Load) -> None:
        try:
            results[load.label] = closed_loop(
                load.url,
                load.name,
                load.payloads,
                load.clients,
                duration_s,
                warmup_s,
                timeout=timeout,
                metrics=False,
                keep_latencies=True,
                unique_logids=True,
            )
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(load,), name=f"load-{load.label}") for load in loads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return results


def pooled(rounds: Sequence[Mapping[str, Any]]) -> dict:
    """Rounds of one load pooled: images/s = all successes / all measured seconds,
    percentiles over every latency (rounds need ``latencies_s``)."""
    from bench.lib.measure import answered
    from client.stats import latency_summary

    ok = sum(answered(r) for r in rounds)
    seconds = sum(r["duration_s"] for r in rounds)
    latencies = [x for r in rounds for x in r.get("latencies_s") or ()]
    return {
        "ok": ok,
        "failed": sum(r.get("failed", 0) for r in rounds),
        "seconds": seconds,
        "rate": ok / seconds if seconds > 0 else 0.0,
        "latency_ms": latency_summary(latencies),
    }


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den``, None when either is missing or ``den`` is 0."""
    if num is None or den is None or den == 0:
        return None
    return num / den


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def call_pipelines(before: Any, after: Any, op: str) -> dict:
    """Predictor calls of shared op ``op`` between two /metrics snapshots, and how
    many held items of more than one pipeline (``batchline_op_call_pipelines``)."""
    name = "batchline_op_call_pipelines"
    calls = after.delta(before, f"{name}_count", pipeline=SHARED, op=op)
    single = after.delta(before, f"{name}_bucket", pipeline=SHARED, op=op, le="1.0")
    mixed = calls - single
    return {"calls": calls, "mixed": mixed, "mixed_share": ratio(mixed, calls)}


def shared_requests(before: Any, after: Any, op: str) -> dict[str, float]:
    """Requests each pipeline sent into shared op ``op`` (``batchline_shared_op_requests``)."""
    name = "batchline_shared_op_requests_total"
    return {p: after.delta(before, name, op=op, pipeline=p) for p in after.label_values(name, "pipeline")}


def shadow_stats(before: Any, after: Any, pipeline: str) -> dict:
    """The shadow copies of route ``pipeline`` between two snapshots: count per
    outcome, the agreement gauge (cumulative, from ``after``) and the shadow
    copies' mean engine latency in ms."""
    counts = {
        outcome: after.delta(before, "batchline_shadow_requests_total", pipeline=pipeline, outcome=outcome)
        for outcome in SHADOW_OUTCOMES
    }
    agreement_seen = pipeline in after.label_values("batchline_shadow_agreement", "pipeline")
    n = after.delta(before, "batchline_shadow_request_seconds_count", pipeline=pipeline)
    total = after.delta(before, "batchline_shadow_request_seconds_sum", pipeline=pipeline)
    return {
        "outcomes": counts,
        "offered": sum(counts.values()),
        "agreement": after.value("batchline_shadow_agreement", pipeline=pipeline) if agreement_seen else None,
        "mean_latency_ms": None if n <= 0 else total / n * 1000.0,
    }


def op_layout(config: Mapping[str, Any]) -> str:
    """What each op of ``config`` runs on, e.g. ``det process 2x1 openvino max_batch 2 (shared)``."""
    parts = []
    for op_name, op in (config.get("op") or {}).items():
        svc = op.get("local_service_conf") or {}
        mode = svc.get("instance_mode", "thread")
        n, t = int(svc.get("instance_num", 1)), int(svc.get("thread_num", 1))
        engine = engine_label(svc)
        share = op.get("share")
        shared = "" if not share else f" (shared{'' if share is True else ' as ' + str(share)})"
        parts.append(f"{op_name} {mode} {n}x{t} {engine} max_batch {svc.get('max_batch_size', 1)}{shared}")
    return ", ".join(parts)


def predictor_processes(configs: Sequence[Mapping[str, Any]], shared: bool) -> int:
    """Predictor processes the ops of ``configs`` start (``instance_mode: process``);
    ``shared``: ops with one share name run once (one server), else every copy counts."""
    seen: set[str] = set()
    total = 0
    for config in configs:
        for op_name, op in (config.get("op") or {}).items():
            svc = op.get("local_service_conf") or {}
            if svc.get("instance_mode", "thread") != "process":
                continue
            share = op.get("share")
            if shared and share:
                key = op_name if share is True else str(share)
                if key in seen:
                    continue
                seen.add(key)
            total += int(svc.get("instance_num", 1))
    return total


def parse_mixes(text: str, parts: int) -> list[tuple[int, ...]]:
    """Load levels of a mixed load: ``"4+4,7+1"`` -> ``[(4, 4), (7, 1)]``, clients per
    pipeline; a plain number ``N`` splits N clients evenly (:func:`split_clients`).
    A pipeline may get 0 clients (it idles), a level not."""
    out: list[tuple[int, ...]] = []
    for level in (x.strip() for x in text.split(",")):
        if not level:
            continue
        try:
            counts = (
                tuple(int(c) for c in level.split("+")) if "+" in level else tuple(split_clients(int(level), parts))
            )
        except ValueError:
            raise BenchError(f"a load level is N or {'+'.join(['N'] * parts)} clients, got {level!r}") from None
        if len(counts) != parts or min(counts) < 0 or sum(counts) < 1:
            raise BenchError(f"a load level needs {parts} client counts >= 0, not all 0; got {level!r}")
        out.append(counts)
    if not out:
        raise BenchError(f"no load level in {text!r}")
    return out


def mix_label(counts: Sequence[int]) -> str:
    return "+".join(str(c) for c in counts)


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` -> ``{KEY: VALUE}`` (a server's extra environment)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BenchError(f"an environment setting is KEY=VALUE, got {pair!r}")
        out[key] = value
    return out
