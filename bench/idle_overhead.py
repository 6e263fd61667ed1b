"""What a lone request pays for being served: served p50 - in-process p50.

One sequential client, rec pipeline (configs/rec.yml) with
``max_queue_delay: 10`` ms, the same crop every time. In the same run, in
interleaved blocks:

* in-process: ``serving.batching.direct.run_op_direct`` with the same op class, params
  and predictor settings, fed the same PNG bytes (so image decode, preprocess,
  run and postprocess are all counted, as in the server);
* served, ``batching_policy: adaptive`` (the default): must not wait the
  delay -- target: p50 overhead <= 2 ms;
* served, ``batching_policy: fixed``: waits the full delay (Triton /
  TorchServe / Ray Serve behaviour), shown for contrast (~ +10 ms).

    python -m bench.idle_overhead [--requests 60 --block 10]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time

from bench.lib.configs import derive_config, pipeline_name
from bench.lib.engines import ENGINES, THREADS, add_engine_arg
from bench.lib.inprocess import make_op
from bench.lib.inputs import bench_crops, decode_png, idle_crop
from bench.lib.measure import RunSpans, image_payloads, served_span
from bench.lib.results import verdict, write_result
from bench.lib.script import run_main
from bench.lib.server import served

TARGET_MS = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--delay", type=float, default=10.0, help="max_queue_delay in ms")
    ap.add_argument("--requests", type=int, default=100, help="measured requests per condition")
    ap.add_argument(
        "--block",
        type=int,
        default=1,
        help="requests per condition before switching (1: strict alternation, least drift)",
    )
    ap.add_argument(
        "--crop",
        choices=("short", "median"),
        default="short",
        help="which crop: the shortest-bucket (320 px) crop nearest the median of that "
        "bucket (default: least predictor time, so the least noise), or the median-width crop",
    )
    ap.add_argument(
        "--other",
        metavar="ROOT",
        help="also serve the adaptive config from another checkout (e.g. /work/main) in the same "
        "rotation: an A/B of two server revisions (the client is this tree's for both)",
    )
    add_engine_arg(ap)
    args = ap.parse_args()

    svc = {"thread_num": THREADS, "instance_num": 1, "max_queue_delay": args.delay}
    svc.update(ENGINES[args.engine])
    adaptive = derive_config(args.config, tag="idle-adaptive", ops={args.op: {**svc, "batching_policy": "adaptive"}})
    fixed = derive_config(args.config, tag="idle-fixed", ops={args.op: {**svc, "batching_policy": "fixed"}})
    name = pipeline_name(adaptive)

    crops = bench_crops()
    op, runners = make_op(adaptive, args.op)
    crop = idle_crop(op, crops, args.crop)
    width = op.preprocess(decode_png(crop)).width
    payload = image_payloads([crop])[0]

    import serving.batching.direct as direct_module
    from client.pipeline_client import PipelineClient
    from client.stats import latency_summary
    from serving.batching.direct import run_op_direct
    from serving.config import load_config

    in_process_spans = RunSpans()
    direct_module.run_batch = in_process_spans.wrap(direct_module.run_batch)  # type: ignore[assignment]
    from serving.service.decode import decode_image

    max_pixels = load_config(adaptive).max_image_pixels

    def direct() -> None:
        # ops take decoded images; the server decodes the request's bytes first, so decode here too
        run_op_direct(op, runners[0], {"input": decode_image(crop, max_pixels=max_pixels)})

    lat: dict[str, list[float]] = {"in_process": [], "adaptive": [], "fixed": [], "http_floor": []}
    answers = {}
    with contextlib.ExitStack() as stack:
        srv_a, srv_f = stack.enter_context(served(adaptive)), stack.enter_context(served(fixed))
        ca = stack.enter_context(PipelineClient(srv_a.url, pool_size=1))
        cf = stack.enter_context(PipelineClient(srv_f.url, pool_size=1))
        calls = {
            "in_process": direct,
            "adaptive": lambda: answers.__setitem__("adaptive", ca.predict_raw(name, payload)),
            "fixed": lambda: answers.__setitem__("fixed", cf.predict_raw(name, payload)),
            # the HTTP round trip alone (GET /health/live on the adaptive server): the floor
            "http_floor": lambda: ca.health_live(),
        }
        if args.other:
            srv_o = stack.enter_context(served(adaptive, root=args.other))
            co = stack.enter_context(PipelineClient(srv_o.url, pool_size=1))
            calls["adaptive_other"] = lambda: answers.__setitem__("adaptive_other", co.predict_raw(name, payload))
            lat["adaptive_other"] = []
        # each request's run_batch span (collate + predictor run + uncollate), read after it
        # outside its timing: the overhead net of the predictor's time, which on a busy machine
        # varies far more than the overhead itself
        spans = {"in_process": in_process_spans.take, "adaptive": served_span(ca)}
        if args.other:
            spans["adaptive_other"] = served_span(co)
        for cond, fn in calls.items():  # warm: connections, this shape, the cost/arrival estimates
            for _ in range(5):
                fn()
            if cond in spans:
                spans[cond]()
        net: dict[str, list[float]] = {k: [] for k in spans}
        order = list(calls)
        rng = random.Random(7)
        blocks = max(1, args.requests // args.block)
        for _ in range(blocks):
            # a fresh order per block: a rotation keeps the cyclic order, so each condition would
            # always follow the same one (e.g. a served request right after an in-process model
            # run, whose engine threads are still spinning)
            rng.shuffle(order)
            for cond in order:
                for _ in range(args.block):
                    t0 = time.perf_counter()
                    calls[cond]()
                    lat[cond].append(time.perf_counter() - t0)
                    if cond in spans:
                        net[cond].append(lat[cond][-1] - spans[cond]())

    summ = {k: latency_summary(v) for k, v in lat.items()}
    net_p50 = {k: latency_summary(v)["p50"] for k, v in net.items()}
    over_net = net_p50["adaptive"] - net_p50["in_process"]
    over_a = summ["adaptive"]["p50"] - summ["in_process"]["p50"]
    over_f = summ["fixed"]["p50"] - summ["in_process"]["p50"]
    write_result(
        "idle_overhead",
        {
            "args": vars(args),
            "crop_width": width,
            "latency_ms": summ,
            "answer": answers.get("adaptive"),
            "overhead_p50_ms": {"adaptive": over_a, "fixed": over_f},
            "net_of_run_p50_ms": net_p50,
            "overhead_net_of_run_p50_ms": over_net,
            "target_ms": TARGET_MS,
        },
    )
    for k, s in summ.items():
        print(f"{k:14s}: p50 {s['p50']:7.2f} ms  p90 {s['p90']:7.2f} ms  mean {s['mean']:7.2f} ms  (n={len(lat[k])})")
    print(
        f"served adaptive - http floor - in-process p50: "
        f"{summ['adaptive']['p50'] - summ['http_floor']['p50'] - summ['in_process']['p50']:+.2f} ms (engine hand-offs)"
    )
    print(f"crop width {width} px (resized); max_queue_delay {args.delay:g} ms")
    print(
        f"fixed policy overhead p50: {over_f:+.2f} ms; fixed - adaptive p50: "
        f"{summ['fixed']['p50'] - summ['adaptive']['p50']:+.2f} ms (pays the {args.delay:g} ms delay)"
    )
    print(
        f"adaptive overhead p50: {over_a:+.2f} ms (target <= {TARGET_MS} ms: "
        f"{verdict(over_a, TARGET_MS, higher_is_better=False)})"
    )
    print(
        "net of each request's run_batch span, p50: "
        + ", ".join(f"{k} {v:.2f} ms" for k, v in net_p50.items())
        + f"; adaptive - in_process: {over_net:+.2f} ms"
    )
    if args.other:
        print(f"this - other, net of run: {net_p50['adaptive'] - net_p50['adaptive_other']:+.2f} ms")
        over_o = summ["adaptive_other"]["p50"] - summ["in_process"]["p50"]
        print(f"other checkout ({args.other}) adaptive overhead p50: {over_o:+.2f} ms")
        print(f"this - other adaptive p50: {over_a - over_o:+.2f} ms")
    print(f"RATIO idle overhead p50 (adaptive) = {over_a:.2f} ms")
    return 0


if __name__ == "__main__":
    run_main(main)
