"""Server memory with 4 predictor instances vs 1 (instances are clones that
share the weights).

Two rec servers (configs/rec.yml) side by side, ``instance_num: 1`` and
``instance_num: 4``, otherwise identical. Each server's resident memory
(serving.runners.process_memory.rss_bytes, the figure VmRSS shows) is read
after start-up (every instance warmed on every width bucket) and again after
``--load`` seconds of mixed crops at ``--clients`` clients (so every instance
has run real batches). Target: RSS(4) / RSS(1) <= 1.3 after warm-up.

    python -m bench.memory [--load 15 --clients 16]
"""

from __future__ import annotations

import argparse

from bench.lib.configs import derive_config, pipeline_name
from bench.lib.engines import ENGINES, THREADS, add_engine_arg
from bench.lib.inputs import bench_crops
from bench.lib.measure import closed_loop, image_payloads, rss_kb
from bench.lib.results import verdict, write_result
from bench.lib.script import run_main
from bench.lib.server import served

TARGET = 1.3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--load", type=float, default=15.0, help="seconds of load after the warm-up reading (0: skip)")
    ap.add_argument("--clients", type=int, default=16)
    add_engine_arg(ap)
    args = ap.parse_args()

    svc: dict = {"thread_num": THREADS}
    svc.update(ENGINES[args.engine])
    one = derive_config(args.config, tag="mem-1", ops={args.op: {**svc, "instance_num": 1}})
    many = derive_config(
        args.config, tag=f"mem-{args.instances}", ops={args.op: {**svc, "instance_num": args.instances}}
    )
    name = pipeline_name(one)
    crops = bench_crops()
    payloads = image_payloads(crops)

    rss: dict = {}
    with served(one) as s1, served(many) as sn:
        rss["warm"] = {"1": rss_kb(s1.proc.pid), str(args.instances): rss_kb(sn.proc.pid)}
        if args.load > 0:
            for srv in (s1, sn):
                closed_loop(srv.url, name, payloads, args.clients, args.load, 0.0)
            rss["after_load"] = {"1": rss_kb(s1.proc.pid), str(args.instances): rss_kb(sn.proc.pid)}

    ratios = {phase: v[str(args.instances)] / v["1"] for phase, v in rss.items()}
    write_result(
        "memory" if args.engine == "config" else f"memory_{args.engine}",
        {"args": vars(args), "rss_kb": rss, "ratios": ratios, "target": TARGET},
    )
    for phase, v in rss.items():
        print(
            f"{phase:10s}: RSS instance_num=1 {v['1'] / 1024:7.1f} MiB, instance_num={args.instances} "
            f"{v[str(args.instances)] / 1024:7.1f} MiB -> {ratios[phase]:.2f}x"
        )
    print(
        f"after warm-up: {ratios['warm']:.2f}x (target <= {TARGET}: "
        f"{verdict(ratios['warm'], TARGET, higher_is_better=False)})"
    )
    if "after_load" in ratios:
        print(
            f"after load:    {ratios['after_load']:.2f}x (target <= {TARGET}: "
            f"{verdict(ratios['after_load'], TARGET, higher_is_better=False)})"
        )
    print(f"RATIO memory {args.instances} instances / 1 = {ratios['warm']:.2f}x")
    return 0


if __name__ == "__main__":
    run_main(main)
