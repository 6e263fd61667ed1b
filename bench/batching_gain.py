"""How much of the offline batching gain the served rec pipeline keeps.

In one run, for two input sets -- one fixed crop (the median-width crop, every
request the same shape) and the mixed set of real crops (det over rendered
pages, 14 width buckets):

* offline: the bare rec predictor in-process, fed by the op's own ``collate``
  (so shapes and padding match the server), at batch 1 and at batch 32;
  offline gain = items/s at 32 / items/s at 1. Preprocessing is done once up
  front and not timed: this is the predictor's limit.
* served: two servers from configs/rec.yml, ``max_batch_size: 32`` and
  ``max_batch_size: 1`` (everything else equal), started side by side and
  measured in interleaved rounds with ``--clients`` closed-loop clients;
  served gain = req/s with 32 / req/s with 1.
* efficiency = served gain / offline gain (target >= 0.9).

    python -m bench.batching_gain [--duration 8 --rounds 2 --clients 32]
"""

from __future__ import annotations

import argparse
import math

from bench.lib.configs import derive_config, load_yaml, pipeline_name
from bench.lib.engines import ENGINES, THREADS, add_engine_arg
from bench.lib.inprocess import make_op
from bench.lib.inputs import bench_crops, decode_png, fixed_crop
from bench.lib.measure import answered, closed_loop, image_payloads, time_loop
from bench.lib.results import verdict, write_result
from bench.lib.script import run_main
from bench.lib.server import served

TARGET = 0.9


def offline_rates(op, runner, items, batches: list[int], seconds: float, rounds: int) -> dict:
    """items/s of collate + run over ``items`` in chunks of each batch size
    (cycling through ``items``), the batch sizes interleaved in ``rounds``."""
    n = len(items)

    def caller(batch: int):
        def call(i: int) -> int:
            start = (i * batch) % n
            chunk = [items[(start + k) % n] for k in range(batch)]
            for sub in op.collate(chunk):
                op.run(runner, sub.feed)
            return batch

        return call

    runs: dict = {b: [] for b in batches}
    for b in batches:  # warm every distinct chunk: the offline limit is for warm shapes
        chunks = n // math.gcd(n, b)
        for i in range(min(chunks, 64)):
            caller(b)(i)
    for rnd in range(rounds):
        for b in batches if rnd % 2 == 0 else batches[::-1]:
            runs[b].append(time_loop(caller(b), seconds / rounds, min_calls=2))
    out = {}
    for b, rs in runs.items():
        items_done = sum(r["items"] for r in rs)
        secs = sum(r["seconds"] for r in rs)
        out[b] = {"items_per_s": items_done / secs, "items": items_done, "seconds": secs}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec", help="repo config name (default: rec)")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--duration", type=float, default=8.0, help="measured seconds per round and server")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--prime",
        type=float,
        default=15.0,
        help="unmeasured seconds of load per server and input set first (warms oneDNN shapes)",
    )
    ap.add_argument("--offline-seconds", type=float, default=6.0, help="per batch size and input set")
    add_engine_arg(ap)
    ap.add_argument("--sets", default="fixed,mixed")
    args = ap.parse_args()

    base = {"thread_num": THREADS, "instance_num": 1}
    base.update(ENGINES[args.engine])
    on_path = derive_config(args.config, tag="batch-on", ops={args.op: {**base, "max_batch_size": args.batch}})
    off_path = derive_config(args.config, tag="batch-off", ops={args.op: {**base, "max_batch_size": 1}})
    name = pipeline_name(on_path)
    crops = bench_crops()
    # the mixed set is cut to a multiple of --batch so batch-32 chunks repeat (and can be warmed)
    mixed = crops[: max(args.batch, len(crops) // args.batch * args.batch)]
    sets = {"fixed": [fixed_crop(crops)], "mixed": mixed}
    chosen = [s.strip() for s in args.sets.split(",") if s.strip()]

    # ---- offline: the predictor's own limit ------------------------------------------------
    op, runners = make_op(on_path, args.op)
    offline = {}
    for set_name in chosen:
        items = [op.preprocess(decode_png(c)) for c in sets[set_name]]
        rates = offline_rates(op, runners[0], items, [1, args.batch], args.offline_seconds, args.rounds)
        r1, rb = rates[1], rates[args.batch]
        offline[set_name] = {
            "batch_1": r1,
            f"batch_{args.batch}": rb,
            "gain": rb["items_per_s"] / r1["items_per_s"],
            "widths": sorted({op.bucket_width(it.width) for it in items}),
        }
        print(
            f"offline {set_name:5s}: {r1['items_per_s']:7.2f} items/s at batch 1, "
            f"{rb['items_per_s']:7.2f} at batch {args.batch}  -> gain {offline[set_name]['gain']:.2f}x",
            flush=True,
        )
    del op, runners

    # ---- served: both servers up, interleaved rounds ------------------------------------------
    served_runs: dict = {s: {"on": [], "off": []} for s in chosen}
    with served(on_path) as on_srv, served(off_path) as off_srv:
        for set_name in chosen:
            payloads = image_payloads(sets[set_name])
            if args.prime > 0:
                for srv in (on_srv, off_srv):
                    closed_loop(srv.url, name, payloads, args.clients, args.prime, 0.0)
            for rnd in range(args.rounds):
                for label, srv in (
                    (("on", on_srv), ("off", off_srv)) if rnd % 2 == 0 else (("off", off_srv), ("on", on_srv))
                ):
                    res = closed_loop(srv.url, name, payloads, args.clients, args.duration, args.warmup)
                    served_runs[set_name][label].append(res)
                    stats = res.get("op_stats", {}).get(args.op, {})
                    print(
                        f"served  {set_name:5s} batching {label:3s} round {rnd}: {res['qps']:7.2f} req/s "
                        f"p50 {res['latency_ms']['p50']:.0f} ms, mean batch "
                        f"{stats.get('mean_batch_size') or 0:.1f} ({stats.get('mean_call_rows') or 0:.1f} rows per "
                        f"predictor call), run {stats.get('mean_run_ms') or 0:.0f} ms, "
                        f"queue wait {stats.get('mean_queue_wait_ms') or 0:.0f} ms",
                        flush=True,
                    )

    def qps(results: list) -> float:
        return sum(answered(r) for r in results) / sum(r["duration_s"] for r in results)

    summary = {}
    for set_name in chosen:
        on, off = qps(served_runs[set_name]["on"]), qps(served_runs[set_name]["off"])
        served_gain = on / off
        eff = served_gain / offline[set_name]["gain"]
        summary[set_name] = {
            "served_on_qps": on,
            "served_off_qps": off,
            "served_gain": served_gain,
            "offline_gain": offline[set_name]["gain"],
            "efficiency": eff,
            "served_on_vs_offline_batch": on / offline[set_name][f"batch_{args.batch}"]["items_per_s"],
            "served_off_vs_offline_1": off / offline[set_name]["batch_1"]["items_per_s"],
        }
    write_result(
        "batching_gain",
        {
            "args": vars(args),
            "configs": {"on": load_yaml(on_path), "off": load_yaml(off_path)},
            "offline": offline,
            "served": served_runs,
            "summary": summary,
            "target": TARGET,
        },
    )
    print()
    for set_name in chosen:
        s = summary[set_name]
        print(
            f"{set_name:5s}: served gain {s['served_gain']:.2f}x ({s['served_on_qps']:.2f} vs "
            f"{s['served_off_qps']:.2f} req/s), offline gain {s['offline_gain']:.2f}x, "
            f"efficiency {s['efficiency']:.2f} (target >= {TARGET}: "
            f"{verdict(s['efficiency'], TARGET)})"
        )
    last = chosen[-1]
    print(f"RATIO batching efficiency ({last}) = {summary[last]['efficiency']:.2f}")
    return 0


if __name__ == "__main__":
    run_main(main)
