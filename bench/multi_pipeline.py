"""Two pipelines on one server with shared det/rec, against two separate servers.

Same mixed load on every setup: at each ``--clients`` level, closed-loop
clients sending to ``/ocr/prediction`` and to ``/ocr_ernie/prediction`` at
once (``4+4``: balanced; ``7+1``: one pipeline hot, the other nearly idle),
cycling through the 12 OCR pages committed under tests/data/ocr/sample. Each
request carries its own logid. Setups, all started together and measured one
after another at each level, the order reversed every other round:

* ``shared``: one server on configs/repository/ocr.yml + ocr_ernie.yml as
  shipped: det and rec ``share: true``, one det and one rec stage
  (``instance_mode: process``, 2 x 1 thread each, pinned over both cores) fed
  by both pipelines;
* ``overlap`` (separate): two servers, one per file with ``share`` removed,
  so each has the same det/rec settings as the shared stages (2 x 1 each):
  twice the predictor processes, all on the same 2 cores;
* ``split`` (separate): two servers with det and rec 1 x 1 each, so the
  total is the shared server's 4 det/rec processes, each server confined to
  a core of its own (what separate servers on a 2-core box do so as not to
  pin onto the same core).

Per pipeline: images/s and p50/p99 (pooled over rounds), the shared / separate
ratios, and from the shared server's /metrics how many det and rec predictor
calls held items of both pipelines (``batchline_op_call_pipelines``). Also
the CPU each setup's process trees used (cores busy) and their RSS.

    python -m bench.multi_pipeline [--clients 4+4,7+1 --duration 15 --rounds 2 --separate overlap,split]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from contextlib import ExitStack
from typing import Any

from bench.lib.configs import apply_overrides, load_yaml, write_config
from bench.lib.inputs import sample_page_pngs
from bench.lib.measure import cpu_used, image_payloads, scrape_metrics, tree_cpu_seconds, tree_rss_kb
from bench.lib.multi import (
    Load,
    call_pipelines,
    concurrent_loops,
    fmt_ratio,
    mix_label,
    op_layout,
    parse_env,
    parse_mixes,
    pooled,
    predictor_processes,
    ratio,
    shared_requests,
    without_share,
    write_repository,
)
from bench.lib.paths import CONFIG_DIR
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served

PIPELINES = ("ocr", "ocr_ernie")
SEPARATE = ("overlap", "split")


def setups(kinds: list[str]) -> dict[str, dict[str, Any]]:
    """Per setup: its servers (config path, pipelines served, CPUs) and what it runs, in words."""
    shipped = [load_yaml(os.path.join(CONFIG_DIR, "repository", f"{p}.yml")) for p in PIPELINES]
    cpus = sorted(os.sched_getaffinity(0))
    out: dict[str, dict[str, Any]] = {}
    out["shared"] = {
        "servers": [(write_repository(shipped, tag="shared"), list(PIPELINES), None)],
        "runs": (
            f"one server, configs/repository/{{ocr,ocr_ernie}}.yml as shipped, CPUs {cpus}: "
            + "; ".join(f"{c['name']}: {op_layout(c)}" for c in shipped)
            + f" -> {predictor_processes(shipped, shared=True)} det/rec predictor processes"
        ),
    }
    if "overlap" in kinds:
        confs = [without_share(c) for c in shipped]
        out["overlap"] = {
            "servers": [(write_config(c, tag=f"sep-{c['name']}"), [c["name"]], None) for c in confs],
            "runs": (
                f"two servers, one per file with `share` removed (same det/rec settings), both on CPUs {cpus}: "
                + "; ".join(f"{c['name']}: {op_layout(c)}" for c in confs)
                + f" -> {predictor_processes(confs, shared=False)} det/rec predictor processes"
            ),
        }
    if "split" in kinds:
        if len(cpus) < 2:
            raise BenchError("the split setup needs 2 CPUs")
        half = {"instance_num": 1}
        confs = [apply_overrides(without_share(c), ops={"det": half, "rec": half}) for c in shipped]
        cores = [cpus[: len(cpus) // 2], cpus[len(cpus) // 2 :]]
        out["split"] = {
            "servers": [(write_config(c, tag=f"split-{c['name']}"), [c["name"]], k) for c, k in zip(confs, cores)],
            "runs": (
                "two servers, det and rec 1 x 1 each, each server confined to its own CPUs ("
                + ", ".join(f"{c['name']} {k}" for c, k in zip(confs, cores))
                + "): "
                + "; ".join(f"{c['name']}: {op_layout(c)}" for c in confs)
                + f" -> {predictor_processes(confs, shared=False)} det/rec predictor processes"
            ),
        }
    return out


def answer_of(result: dict, pipeline: str) -> list:
    lines = json.loads(result["value"][0])
    if pipeline == "ocr_ernie":
        return [(line["text"], line.get("label")) for line in lines]
    return [line["text"] for line in lines]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--clients",
        default="4+4,7+1",
        help="load levels: closed-loop clients per pipeline, ocr+ocr_ernie (N: split evenly), comma separated",
    )
    ap.add_argument("--duration", type=float, default=15.0, help="measured seconds per round, level and setup")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2, help="rounds; the setup order reverses every other round")
    ap.add_argument("--prime", type=float, default=10.0, help="unmeasured seconds of load on each setup first")
    ap.add_argument("--separate", default="overlap,split", help=f"separate-server setups to run: {','.join(SEPARATE)}")
    ap.add_argument("--check", type=int, default=4, help="pages whose answers are compared across setups")
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment variable for every server (repeatable), e.g. KMP_BLOCKTIME=0",
    )
    args = ap.parse_args()
    env = parse_env(args.env)
    kinds = [k for k in args.separate.split(",") if k]
    if not kinds or any(k not in SEPARATE for k in kinds):
        raise BenchError(f"--separate takes some of {SEPARATE}, got {args.separate!r}")
    mixes = [dict(zip(PIPELINES, m)) for m in parse_mixes(args.clients, len(PIPELINES))]
    labels = [mix_label(list(m.values())) for m in mixes]
    payloads = image_payloads(sample_page_pngs())
    plan = setups(kinds)
    for who, setup in plan.items():
        print(f"{who}: {setup['runs']}", flush=True)
    print(
        f"load levels (clients {'+'.join(PIPELINES)}): {', '.join(labels)}; {len(payloads)} committed pages", flush=True
    )
    print(f"server environment: {env or 'as inherited'}", flush=True)

    from client.pipeline_client import PipelineClient
    from client.stats import op_stats

    # (setup, level) -> pipeline -> rounds
    rounds: dict[tuple[str, str], dict[str, list[dict]]] = {}
    extras: dict[tuple[str, str], list[dict]] = {}
    rss: dict[str, int] = {}
    same = {p: 0 for p in PIPELINES}
    checked = 0
    started = time.monotonic()
    with ExitStack() as stack:
        urls: dict[str, dict[str, str]] = {}
        servers: dict[str, list[Any]] = {}
        for who, setup in plan.items():
            for path, names, cpus in setup["servers"]:
                server = stack.enter_context(served(path, cpus=cpus, env=env))
                servers.setdefault(who, []).append(server)
                for name in names:
                    urls.setdefault(who, {})[name] = server.url
        print(f"servers up in {time.monotonic() - started:.0f} s", flush=True)

        # the same answers everywhere (setups differ in layout, not in what they compute)
        for i in range(min(args.check, len(payloads))):
            for p in PIPELINES:
                answers = []
                for who in plan:
                    with PipelineClient(urls[who][p]) as c:
                        answers.append(answer_of(c.predict_raw(p, payloads[i]), p))
                same[p] += all(a == answers[0] for a in answers)
            checked += 1

        def loads(who: str, mix: dict[str, int]) -> list[Load]:
            return [Load(p, urls[who][p], p, payloads, n) for p, n in mix.items() if n > 0]

        if args.prime > 0:
            for who in plan:
                concurrent_loops(loads(who, mixes[0]), args.prime, 0.0)
        for who in plan:
            rss[who] = sum(tree_rss_kb(s.proc.pid) for s in servers[who])

        order = list(plan)
        for rnd in range(args.rounds):
            for mix, label in zip(mixes, labels):
                for who in order if rnd % 2 == 0 else order[::-1]:
                    roots = [s.proc.pid for s in servers[who]]
                    before = [scrape_metrics(s.url) for s in servers[who]]
                    cpu0, t0 = tree_cpu_seconds(roots), time.monotonic()
                    res = concurrent_loops(loads(who, mix), args.duration, args.warmup)
                    cpu1, wall = tree_cpu_seconds(roots), time.monotonic() - t0
                    after = [scrape_metrics(s.url) for s in servers[who]]
                    extra: dict[str, Any] = {
                        "op_stats": [op_stats(b, a) for b, a in zip(before, after)],
                        "cores_busy": cpu_used(cpu0, cpu1) / wall,
                        "server_process_cores": [(cpu1.get(r, 0.0) - cpu0.get(r, 0.0)) / wall for r in roots],
                    }
                    if who == "shared":
                        extra["call_pipelines"] = {op: call_pipelines(before[0], after[0], op) for op in ("det", "rec")}
                        extra["shared_requests"] = {
                            op: shared_requests(before[0], after[0], op) for op in ("det", "rec")
                        }
                    extras.setdefault((who, label), []).append(extra)
                    per = rounds.setdefault((who, label), {p: [] for p in PIPELINES})
                    line = f"round {rnd} {label} {who:7s}:"
                    for p in PIPELINES:
                        if p not in res:
                            continue
                        r = res[p]
                        per[p].append(r)
                        lat = r["latency_ms"]
                        line += f" {p} {r['qps']:5.2f} img/s p50 {lat['p50']:5.0f} p99 {lat['p99']:5.0f} ms"
                        line += f" ({r['failed']} failed) |"
                    line += f" total {sum(r['qps'] for r in res.values()):5.2f} img/s"
                    line += f" | cores busy {extra['cores_busy']:.2f} (server processes "
                    line += "/".join(f"{x:.2f}" for x in extra["server_process_cores"]) + ")"
                    rec_rows = [s.get("rec", {}).get("mean_call_rows") for s in extra["op_stats"]]
                    line += " | rec rows/call " + "/".join(f"{x:.1f}" if x else "-" for x in rec_rows)
                    if who == "shared":
                        cp = extra["call_pipelines"]["rec"]
                        line += f" | rec calls with both pipelines {cp['mixed']:.0f}/{cp['calls']:.0f}"
                    print(line, flush=True)

    summary: dict[str, dict[str, Any]] = {}
    ratios: dict[str, dict[str, Any]] = {}
    for label in labels:
        for who in plan:
            per = {p: pooled(rs) for p, rs in rounds[(who, label)].items() if rs}
            summary[f"{who} {label}"] = {**per, "total_rate": sum(x["rate"] for x in per.values())}
        a = summary[f"shared {label}"]
        for sep in kinds:
            b = summary[f"{sep} {label}"]
            totals = [
                [sum(rs[i]["qps"] for rs in rounds[(who, label)].values() if rs) for i in range(args.rounds)]
                for who in ("shared", sep)
            ]
            ratios[f"{sep} {label}"] = {
                "total_rate": ratio(a["total_rate"], b["total_rate"]),
                "total_rate_per_round": [ratio(x, y) for x, y in zip(*totals)],
                **{
                    p: {
                        "rate": ratio(a[p]["rate"], b[p]["rate"]),
                        "p50": ratio(a[p]["latency_ms"]["p50"], b[p]["latency_ms"]["p50"]),
                        "p99": ratio(a[p]["latency_ms"]["p99"], b[p]["latency_ms"]["p99"]),
                    }
                    for p in PIPELINES
                    if p in a and p in b
                },
            }
    mixed = {
        label: {
            op: {
                "calls": sum(e["call_pipelines"][op]["calls"] for e in extras[("shared", label)]),
                "mixed": sum(e["call_pipelines"][op]["mixed"] for e in extras[("shared", label)]),
            }
            for op in ("det", "rec")
        }
        for label in labels
    }
    cores = {
        f"{who} {label}": statistics.mean(e["cores_busy"] for e in extras[(who, label)])
        for who in plan
        for label in labels
    }
    write_result(
        "multi_pipeline" + "".join(f"_{k}-{v}" for k, v in sorted(env.items())),  # variants don't overwrite
        {
            "args": vars(args),
            "setups": {who: setup["runs"] for who, setup in plan.items()},
            "summary": summary,
            "ratios": ratios,
            "rss_kb_after_prime": rss,
            "rss_ratio": {sep: ratio(rss["shared"], rss[sep]) for sep in kinds},
            "cores_busy": cores,
            "shared_calls_with_both_pipelines": mixed,
            "same_answers": {"pages": checked, **same},
            "rounds": {
                f"{who} {label}": {p: [_no_raw(r) for r in rs] for p, rs in per.items()}
                for (who, label), per in rounds.items()
            },
            "metrics": {f"{who} {label}": e for (who, label), e in extras.items()},
        },
    )

    print()
    for who, setup in plan.items():
        print(f"{who}: {setup['runs']}")
    print(f"{args.rounds} rounds x {args.duration:g} s per level and setup, pages cycled per client")
    print(f"server environment: {env or 'as inherited'}")
    print(f"same answers on {checked} pages across setups: " + ", ".join(f"{p} {same[p]}/{checked}" for p in PIPELINES))
    print("RSS after priming: " + ", ".join(f"{who} {kb / 1024:,.0f} MiB" for who, kb in rss.items()))
    for label in labels:
        print(f"-- clients {'+'.join(PIPELINES)} = {label}")
        for who in plan:
            s = summary[f"{who} {label}"]
            print(
                f"{who:7s}: "
                + " | ".join(
                    f"{p} {s[p]['rate']:5.2f} img/s p50 {s[p]['latency_ms']['p50']:5.0f} p99 "
                    f"{s[p]['latency_ms']['p99']:5.0f} ms"
                    for p in PIPELINES
                    if p in s
                )
                + f" | total {s['total_rate']:5.2f} img/s | cores busy {cores[f'{who} {label}']:.2f}"
            )
        for op, m in mixed[label].items():
            share = m["mixed"] / m["calls"] if m["calls"] else 0.0
            print(
                f"shared {op}: {m['mixed']:.0f} of {m['calls']:.0f} predictor calls held items of both pipelines",
                end="",
            )
            print(f" ({share:.0%})")
        for sep in kinds:
            r = ratios[f"{sep} {label}"]
            print(
                f"shared / {sep}: total images/s {fmt_ratio(r['total_rate'])} (rounds "
                + ", ".join(fmt_ratio(x) for x in r["total_rate_per_round"])
                + ") | "
                + " | ".join(
                    f"{p} images/s {fmt_ratio(r[p]['rate'])} p50 {fmt_ratio(r[p]['p50'])} p99 {fmt_ratio(r[p]['p99'])}"
                    for p in PIPELINES
                    if p in r
                )
            )
    print(
        "RATIO shared / separate total images/s = "
        + "; ".join(
            f"{label}: " + ", ".join(f"{fmt_ratio(ratios[f'{sep} {label}']['total_rate'])} vs {sep}" for sep in kinds)
            for label in labels
        )
    )
    return 0


def _no_raw(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "latencies_s"}


if __name__ == "__main__":
    run_main(main)
