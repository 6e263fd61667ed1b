"""What a shadow version costs the primary: p50/p99 and images/s with and without.

Two servers of the same build on the same repository, started together:

* ``shadow``: ``ocr`` v1 (configs/ocr.yml) is the primary, ``ocr`` v2 (the
  same file with ``max_batch_size: 1`` for det and rec: the issue's "batching
  on vs off" comparison) is its shadow: ``routing: {default: 1, shadow:
  {version: 2, sample: 0.5}}``. v2's predictor processes run in the idle CPU
  class (SCHED_IDLE), its copies
  queue behind every primary item and are dropped first under load;
* ``none``: the same two files with ``routing: {default: 1}`` only: v2 is
  loaded (the same processes exist) but gets no traffic.

Closed-loop clients at each ``--clients`` level (1: the cores are not
saturated; 4 and 16: they are, and the shadow must yield), each request with its own ``logid`` (the sampling key), the
12 committed OCR pages. Each level is measured on one server then the other,
the order reversed every other round. Reports the primary's images/s and
p50/p99 (pooled over rounds) and the shadow / none ratios, plus the shadow's
counters from /metrics (agree, disagree, dropped, ...) and
``batchline_shadow_agreement``, and where the CPU went (the server process,
the shadow version's idle-class predictor processes).

    python -m bench.shadow_overhead [--clients 1,4,16 --duration 20 --rounds 2 --sample 0.5]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from contextlib import ExitStack
from typing import Any

from bench.lib.configs import apply_overrides, load_repo_config
from bench.lib.inputs import sample_page_pngs
from bench.lib.measure import (
    cpu_used,
    image_payloads,
    scrape_metrics,
    tree_cpu_seconds,
)
from bench.lib.multi import (
    Load,
    concurrent_loops,
    fmt_ratio,
    op_layout,
    pooled,
    ratio,
    shadow_stats,
    write_repository,
)
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served

SETUPS = ("shadow", "none")


def repositories(base: str, sample: float, max_in_flight: int, off_ops: list[str]) -> tuple[dict, dict, dict]:
    """(primary v1 with a shadow route, primary v1 without, v2): the configs of both repositories."""
    v1 = load_repo_config(base)
    v1["version"] = 1
    v2 = apply_overrides(v1, ops={op: {"max_batch_size": 1} for op in off_ops}, top={"version": 2})
    plain = copy.deepcopy(v1)
    plain["routing"] = {"default": 1}
    shadowed = copy.deepcopy(v1)
    shadowed["routing"] = {
        "default": 1,
        "shadow": {"version": 2, "sample": sample, "max_in_flight": max_in_flight},
    }
    return shadowed, plain, v2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ocr", help="repo config of the primary (configs/<name>.yml)")
    ap.add_argument("--clients", default="1,4,16", help="closed-loop levels, comma separated")
    ap.add_argument("--duration", type=float, default=20.0, help="measured seconds per round, level and server")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2, help="rounds; the server order reverses every other round")
    ap.add_argument("--prime", type=float, default=10.0, help="unmeasured seconds of load on each server first")
    ap.add_argument("--sample", type=float, default=0.5, help="routing.shadow.sample")
    ap.add_argument("--max-in-flight", type=int, default=4, help="routing.shadow.max_in_flight (the default: 4)")
    ap.add_argument(
        "--off-ops", default="det,rec", help="ops whose max_batch_size the shadow version sets to 1 (comma separated)"
    )
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",") if c]
    if not levels or min(levels) < 1:
        raise BenchError(f"--clients needs positive levels, got {args.clients!r}")
    shadowed, plain, v2 = repositories(args.config, args.sample, args.max_in_flight, args.off_ops.split(","))
    name = shadowed["name"]
    dirs = {
        "shadow": write_repository([shadowed, v2], tag="shadow"),
        "none": write_repository([plain, v2], tag="noshadow"),
    }
    runs = {
        "shadow": f"{name} v1 primary, v2 shadow at sample {args.sample}, max_in_flight {args.max_in_flight}",
        "none": f"{name} v1 primary, v2 loaded with no traffic (routing without shadow)",
    }
    print(f"v1 (primary): configs/{args.config}.yml: {op_layout(shadowed)}", flush=True)
    print(f"v2 (shadow): the same with max_batch_size 1 for {args.off_ops}: {op_layout(v2)}", flush=True)
    for who in SETUPS:
        print(f"{who}: {runs[who]} ({dirs[who]})", flush=True)
    payloads = image_payloads(sample_page_pngs())

    results: dict[tuple[str, int], list[dict]] = {}
    shadow_rounds: dict[int, list[dict]] = {c: [] for c in levels}
    started = time.monotonic()
    with ExitStack() as stack:
        servers = {who: stack.enter_context(served(dirs[who])) for who in SETUPS}
        print(f"servers up in {time.monotonic() - started:.0f} s", flush=True)

        def load(who: str, clients: int) -> list[Load]:
            return [Load(name, servers[who].url, name, payloads, clients)]

        if args.prime > 0:
            for who in SETUPS:
                concurrent_loops(load(who, max(levels)), args.prime, 0.0)
        for rnd in range(args.rounds):
            for c in levels:
                for who in SETUPS if rnd % 2 == 0 else SETUPS[::-1]:
                    before = scrape_metrics(servers[who].url)
                    root = servers[who].proc.pid
                    cpu0, t0 = tree_cpu_seconds([root]), time.monotonic()
                    r = concurrent_loops(load(who, c), args.duration, args.warmup)[name]
                    cpu1, wall = tree_cpu_seconds([root]), time.monotonic() - t0
                    r["cores_busy"] = cpu_used(cpu0, cpu1) / wall
                    # where the CPU went: the server process itself (HTTP, pre/postprocessing of every
                    # version), the idle-class predictor processes (the shadow's), the others (the primary's)
                    r["cores_server"] = (cpu1.get(root, 0.0) - cpu0.get(root, 0.0)) / wall
                    niced = {p for p in cpu1 if p != root and _idle_class(p)}
                    r["cores_niced"] = (
                        cpu_used({p: cpu0.get(p, 0.0) for p in niced}, {p: cpu1[p] for p in niced}) / wall
                    )
                    time.sleep(0.5)  # let the last shadow copies finish, so they are counted in this level
                    after = scrape_metrics(servers[who].url)
                    results.setdefault((who, c), []).append(r)
                    lat = r["latency_ms"]
                    line = (
                        f"round {rnd} {c:2d} clients {who:6s}: {r['qps']:5.2f} img/s p50 {lat['p50']:6.0f} "
                        f"p99 {lat['p99']:6.0f} ms ({r['failed']} failed), cores busy {r['cores_busy']:.2f} "
                        f"(server process {r['cores_server']:.2f}, shadow predictors {r['cores_niced']:.2f})"
                    )
                    if who == "shadow":
                        st = shadow_stats(before, after, name)
                        st["primary_requests"] = after.delta(
                            before, "batchline_requests_total", pipeline=name, version="1"
                        )
                        shadow_rounds[c].append(st)
                        o = st["outcomes"]
                        line += (
                            f" | shadow: agree {o['agree']:.0f} disagree {o['disagree']:.0f} dropped {o['dropped']:.0f}"
                            f" failed {o['shadow_failed'] + o['primary_failed']:.0f} of "
                            f"{st['primary_requests']:.0f} primary requests, agreement {st['agreement']}"
                        )
                    print(line, flush=True)

    summary: dict[str, Any] = {}
    for c in levels:
        a, b = pooled(results[("shadow", c)]), pooled(results[("none", c)])
        outcomes = {k: sum(st["outcomes"][k] for st in shadow_rounds[c]) for k in shadow_rounds[c][0]["outcomes"]}
        primary = sum(st["primary_requests"] for st in shadow_rounds[c])
        summary[str(c)] = {
            "shadow": a,
            "none": b,
            "cores_busy": {who: [r["cores_busy"] for r in results[(who, c)]] for who in SETUPS},
            "cores_server": {who: [r["cores_server"] for r in results[(who, c)]] for who in SETUPS},
            "cores_niced": {who: [r["cores_niced"] for r in results[(who, c)]] for who in SETUPS},
            "ratios": {
                "rate": ratio(a["rate"], b["rate"]),
                "p50": ratio(a["latency_ms"]["p50"], b["latency_ms"]["p50"]),
                "p99": ratio(a["latency_ms"]["p99"], b["latency_ms"]["p99"]),
                "rate_per_round": [
                    ratio(x["qps"], y["qps"]) for x, y in zip(results[("shadow", c)], results[("none", c)])
                ],
            },
            "shadow_outcomes": outcomes,
            "primary_requests": primary,
            "copied_share": ratio(sum(outcomes.values()), primary),
            "compared_share": ratio(outcomes["agree"] + outcomes["disagree"], primary),
            "agreement_last": shadow_rounds[c][-1]["agreement"],
            "shadow_mean_latency_ms": [st["mean_latency_ms"] for st in shadow_rounds[c]],
        }
    write_result(
        "shadow_overhead",
        {
            "args": vars(args),
            "setups": runs,
            "v1_layout": op_layout(shadowed),
            "v2_layout": op_layout(v2),
            "summary": summary,
            "rounds": {
                f"{who}_{c}": [{k: v for k, v in r.items() if k != "latencies_s"} for r in rs]
                for (who, c), rs in results.items()
            },
            "shadow_rounds": shadow_rounds,
        },
    )

    print()
    print(f"primary {name} v1: {op_layout(shadowed)}")
    print(f"shadow {name} v2: {op_layout(v2)}; sample {args.sample}, max_in_flight {args.max_in_flight}")
    print("shadow predictor processes: SCHED_IDLE (the idle CPU class, as the server runs them)")
    for c in levels:
        s = summary[str(c)]
        for who in SETUPS:
            x = s[who]
            busy, server, niced = (statistics.mean(s[k][who]) for k in ("cores_busy", "cores_server", "cores_niced"))
            print(
                f"{c:2d} clients {who:6s}: {x['rate']:5.2f} img/s p50 {x['latency_ms']['p50']:6.0f} "
                f"p99 {x['latency_ms']['p99']:6.0f} ms, cores busy {busy:.2f} (server process {server:.2f}, "
                f"shadow predictors {niced:.2f})"
            )
        o = s["shadow_outcomes"]
        print(
            f"{c:2d} clients shadow copies: of {s['primary_requests']:.0f} primary requests, "
            + ", ".join(f"{k} {v:.0f}" for k, v in o.items())
            + f" (copied {fmt_pct(s['copied_share'])}, compared {fmt_pct(s['compared_share'])}); "
            f"batchline_shadow_agreement {s['agreement_last']}; shadow copies' mean engine latency "
            + ", ".join("n/a" if x is None else f"{x:.0f} ms" for x in s["shadow_mean_latency_ms"])
        )
        r = s["ratios"]
        print(
            f"{c:2d} clients shadow / none: images/s {fmt_ratio(r['rate'])} (rounds "
            + ", ".join(fmt_ratio(x) for x in r["rate_per_round"])
            + f"), p50 {fmt_ratio(r['p50'])}, p99 {fmt_ratio(r['p99'])}"
        )
    print(
        "RATIO shadow / none primary "
        + "; ".join(
            f"{c} clients images/s {fmt_ratio(summary[str(c)]['ratios']['rate'])} "
            f"p50 {fmt_ratio(summary[str(c)]['ratios']['p50'])} p99 {fmt_ratio(summary[str(c)]['ratios']['p99'])}"
            for c in levels
        )
    )
    return 0


def _idle_class(pid: int) -> bool:
    try:
        return os.sched_getscheduler(pid) == os.SCHED_IDLE
    except OSError:
        return False  # the process ended


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


if __name__ == "__main__":
    run_main(main)
