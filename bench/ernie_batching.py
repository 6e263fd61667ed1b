"""ERNIE text classification (configs/ernie.yml): batching gain and length grouping.

Mixed-length texts (single document lines and runs of 2-12 lines joined, so
token lengths spread from a few to ``max_seq_len``). Three servers side by
side, measured in interleaved rounds at ``--clients`` closed-loop clients:

* ``grouped``:   max_batch_size 32, the config's length_buckets (default)
* ``ungrouped``: max_batch_size 32, one bucket = max_seq_len (every batch pads to it)
* ``no_batch``:  max_batch_size 1

Prints the served gain (grouped / no_batch req/s) and the padding ratio
(1 - real/padded tokens, from /metrics batchline_op_real_units_total and
batchline_op_padded_units_total) with and without grouping.

    python -m bench.ernie_batching [--clients 32 --duration 8 --rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random

from bench.lib.configs import derive_config, load_repo_config, pipeline_name
from bench.lib.engines import ENGINES, THREADS, add_engine_arg
from bench.lib.measure import answered, closed_loop, scrape_metrics
from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served


def mixed_texts(count: int, seed: int = 3) -> list[str]:
    from recipes.ernie_fields.data import generate

    rng = random.Random(seed)
    lines = [t for t, _ in generate(max(1, count // 3), seed)]
    out = []
    for i in range(count):
        k = 1 if i % 2 == 0 else rng.randint(2, 12)  # half single lines, half long runs
        out.append(" ".join(rng.choice(lines) for _ in range(k)))
    return out


def padding(before, after, op: str) -> dict:
    real = after.delta(before, "batchline_op_real_units_total", op=op)
    padded = after.delta(before, "batchline_op_padded_units_total", op=op)
    return {"real_tokens": real, "padded_tokens": padded, "padding_ratio": (1 - real / padded) if padded else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ernie")
    ap.add_argument("--op", default="ernie")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prime", type=float, default=5.0)
    ap.add_argument("--texts", type=int, default=256)
    add_engine_arg(ap, default="onednn")
    args = ap.parse_args()

    if not (os.path.isfile(os.path.join(ROOT, "ops", "ernie.py"))):
        raise BenchError("ops/ernie.py does not exist")
    base = load_repo_config(args.config)
    max_seq = int(((base["op"][args.op].get("params") or {}).get("max_seq_len")) or 128)
    svc = {"thread_num": THREADS, "instance_num": 1}
    svc.update(ENGINES[args.engine])
    paths = {
        "grouped": derive_config(args.config, tag="ernie-grouped", ops={args.op: {**svc, "max_batch_size": 32}}),
        "ungrouped": derive_config(
            args.config,
            tag="ernie-ungrouped",
            ops={args.op: {**svc, "max_batch_size": 32}},
            params={args.op: {"length_buckets": [max_seq]}},
        ),
        "no_batch": derive_config(args.config, tag="ernie-nobatch", ops={args.op: {**svc, "max_batch_size": 1}}),
    }
    name = pipeline_name(paths["grouped"])
    from client.pipeline_client import make_payload

    texts = mixed_texts(args.texts)
    payloads = [make_payload([("text", t)]) for t in texts]

    runs: dict = {k: [] for k in paths}
    pads: dict = {}
    with (
        served(paths["grouped"]) as g,
        served(paths["ungrouped"]) as u,
        served(paths["no_batch"]) as n,
    ):
        servers = {"grouped": g, "ungrouped": u, "no_batch": n}
        for srv in servers.values():
            if args.prime > 0:
                closed_loop(srv.url, name, payloads, args.clients, args.prime, 0.0)
        before = {k: scrape_metrics(s.url) for k, s in servers.items()}
        order = list(servers)
        for rnd in range(args.rounds):
            for k in order if rnd % 2 == 0 else order[::-1]:
                res = closed_loop(servers[k].url, name, payloads, args.clients, args.duration, args.warmup)
                runs[k].append(res)
                st = res.get("op_stats", {}).get(args.op, {})
                print(
                    f"round {rnd} {k:9s}: {res['qps']:7.1f} req/s  p50 {res['latency_ms']['p50']:.0f} ms  "
                    f"batch {st.get('mean_batch_size') or 0:.1f} ({st.get('mean_call_rows') or 0:.1f} rows/call)  "
                    f"run {st.get('mean_run_ms') or 0:.1f} ms  "
                    f"padding {100 * (st.get('padding_ratio') or 0):.0f}%",
                    flush=True,
                )
        after = {k: scrape_metrics(s.url) for k, s in servers.items()}
        for k in servers:
            pads[k] = padding(before[k], after[k], args.op)

    def qps(k: str) -> float:
        return sum(answered(r) for r in runs[k]) / sum(r["duration_s"] for r in runs[k])

    rates = {k: qps(k) for k in runs}
    gain = rates["grouped"] / rates["no_batch"]
    write_result(
        "ernie_batching",
        {
            "args": vars(args),
            "req_per_s": rates,
            "served_gain": gain,
            "padding": pads,
            "runs": runs,
            "text_tokens_hint": {"texts": len(texts), "max_seq_len": max_seq},
        },
    )
    print()
    print(
        f"req/s at {args.clients} clients: grouped {rates['grouped']:.1f}, ungrouped {rates['ungrouped']:.1f}, "
        f"no batching {rates['no_batch']:.1f}"
    )
    pg, pu = pads["grouped"]["padding_ratio"], pads["ungrouped"]["padding_ratio"]
    print(f"padding ratio: with length grouping {100 * (pg or 0):.1f}%, without {100 * (pu or 0):.1f}%")
    print(f"grouped / ungrouped throughput = {rates['grouped'] / rates['ungrouped']:.2f}x")
    print(f"RATIO ernie served batching gain = {gain:.2f}x (padding {100 * (pg or 0):.0f}% vs {100 * (pu or 0):.0f}%)")
    return 0


if __name__ == "__main__":
    run_main(main)
