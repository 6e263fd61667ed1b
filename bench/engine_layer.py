"""The engine layer: OpenVINO Runtime instances in the server process against
predictor processes.

Per layout, in interleaved rounds, one server at a time:

* ``rec``: configs/rec.yml, one crop per request, ``--clients`` closed-loop
  clients over the mixed bench crops (throughput), then one sequential
  client on one crop (lone-request latency p50);
* ``ocr``: configs/ocr.yml, full OCR, ``--ocr-clients`` clients over the
  bench pages (throughput);
* after each load, the RSS of the server and its predictor processes
  (the process tree: what the machine really pays).

Layouts (every op of the config gets the same; thread budget 2 x 1 on 2 cores):

* ``paddle-process``: Paddle Inference's OpenVINO engine, 2 pinned child
  processes x 1 thread (configs/ocr.yml before issue 14);
* ``openvino-process``: OpenVINO Runtime in 2 pinned child processes x 1 thread;
* ``openvino-thread``: OpenVINO Runtime in the server process, 2 infer
  requests (streams) x 1 thread on one compiled model.

Ratios are against ``paddle-process``, measured in the same run.

    python bench/engine_layer.py [--duration 10 --rounds 2 --clients 32 --ocr-clients 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import derive_config, pipeline_name  # noqa: E402
from bench.lib.engines import ENGINES  # noqa: E402
from bench.lib.inputs import bench_crops, document_pngs, fixed_crop  # noqa: E402
from bench.lib.measure import closed_loop, image_payloads, tree_rss_kb  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402

LAYOUTS: dict[str, dict] = {
    "paddle-process": {**ENGINES["openvino"], "instance_mode": "process", "instance_num": 2, "thread_num": 1},
    "openvino-process": {**ENGINES["ov-runtime"], "instance_mode": "process", "instance_num": 2, "thread_num": 1},
    "openvino-thread": {**ENGINES["ov-runtime"], "instance_mode": "thread", "instance_num": 2, "thread_num": 1},
}
BASE = "paddle-process"


def lone_p50_ms(url: str, name: str, payload: dict, requests: int) -> float:
    from client.pipeline_client import PipelineClient

    with PipelineClient(url, pool_size=1) as client:
        for _ in range(5):
            client.predict_raw(name, payload)
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            client.predict_raw(name, payload)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of load per measurement")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clients", type=int, default=32, help="rec clients")
    ap.add_argument("--ocr-clients", type=int, default=8)
    ap.add_argument("--lone", type=int, default=60, help="sequential rec requests for the lone p50")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated subset of " + ",".join(LAYOUTS))
    ap.add_argument("--skip-ocr", action="store_true")
    args = ap.parse_args()
    layouts = [name for name in args.layouts.split(",") if name]

    crops = image_payloads(bench_crops())
    lone = image_payloads([fixed_crop(bench_crops())])[0]
    pages = image_payloads(document_pngs())
    rows: dict[str, dict[str, list[float]]] = {
        name: {"rec_qps": [], "lone_ms": [], "rec_rss_mb": [], "ocr_qps": [], "ocr_rss_mb": []} for name in layouts
    }
    for r in range(args.rounds):
        order = layouts[r % len(layouts) :] + layouts[: r % len(layouts)]
        for name in order:
            rec = derive_config("rec", tag=f"engine-{name}", ops={"rec": LAYOUTS[name]})
            with served(rec) as srv:
                res = closed_loop(srv.url, pipeline_name(rec), crops, args.clients, args.duration)
                rows[name]["rec_qps"].append(res["qps"])
                rows[name]["rec_rss_mb"].append(tree_rss_kb(srv.proc.pid) / 1024)
                rows[name]["lone_ms"].append(lone_p50_ms(srv.url, pipeline_name(rec), lone, args.lone))
            print(f"round {r + 1} {name:17s} rec {res['qps']:6.1f} req/s  lone p50 {rows[name]['lone_ms'][-1]:6.2f} ms")
            if args.skip_ocr:
                continue
            ocr = derive_config("ocr", tag=f"engine-{name}", all_ops=LAYOUTS[name])
            with served(ocr) as srv:
                res = closed_loop(srv.url, pipeline_name(ocr), pages, args.ocr_clients, args.duration)
                rows[name]["ocr_qps"].append(res["qps"])
                rows[name]["ocr_rss_mb"].append(tree_rss_kb(srv.proc.pid) / 1024)
            print(f"round {r + 1} {name:17s} ocr {res['qps']:6.2f} img/s")

    def mean(name: str, key: str) -> float:
        values = rows[name][key]
        return statistics.fmean(values) if values else float("nan")

    header = ("rec req/s", "lone p50 ms", "rec RSS MiB", "ocr img/s", "ocr RSS MiB")
    print(f"\n{'layout':17s} " + " ".join(f"{h:>12s}" for h in header))
    for name in layouts:
        print(
            f"{name:17s} {mean(name, 'rec_qps'):12.1f} {mean(name, 'lone_ms'):12.2f} {mean(name, 'rec_rss_mb'):12.0f} "
            f"{mean(name, 'ocr_qps'):12.2f} {mean(name, 'ocr_rss_mb'):12.0f}"
        )
    if BASE in layouts:
        for name in layouts:
            if name == BASE:
                continue
            print(
                f"RATIO {name} / {BASE}: rec {mean(name, 'rec_qps') / mean(BASE, 'rec_qps'):.2f}x, "
                f"lone {mean(name, 'lone_ms') - mean(BASE, 'lone_ms'):+.2f} ms, "
                f"rec RSS {mean(name, 'rec_rss_mb') / mean(BASE, 'rec_rss_mb'):.2f}x, "
                f"ocr {mean(name, 'ocr_qps') / mean(BASE, 'ocr_qps'):.2f}x, "
                f"ocr RSS {mean(name, 'ocr_rss_mb') / mean(BASE, 'ocr_rss_mb'):.2f}x"
            )
    write_result("engine_layer", {"args": vars(args), "layouts": LAYOUTS, "rows": rows})
    return 0


if __name__ == "__main__":
    run_main(main)
