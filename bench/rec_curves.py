"""Throughput / p99 curves of the rec pipeline with batching on and off, with
the bundled ``batchline bench`` command (closed loop over the mixed crops).

Starts two servers from configs/rec.yml (``max_batch_size`` 32 and 1) and, for
each concurrency level, runs on one then the other (alternating which first)

    batchline bench --url URL --pipeline rec --inputs CROPS --concurrency C \\
        --duration D --warmup W --json ... --label ...

then merges the levels into bench/results/rec_curve_{on,off}.json;
bench/run_all.sh draws both with ``batchline bench --plot``.

    python -m bench.rec_curves [--duration 5 --warmup 2 --concurrency 1,4,16,32]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from bench.lib.configs import derive_config, pipeline_name
from bench.lib.engines import ENGINES, THREADS, add_engine_arg
from bench.lib.inputs import bench_crops, crops_dir
from bench.lib.measure import closed_loop, image_payloads
from bench.lib.paths import RESULTS_DIR, ROOT
from bench.lib.script import BenchError, run_main
from bench.lib.server import served


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--concurrency", default="1,4,16,32")
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--prime", type=float, default=10.0, help="unmeasured load before the levels")
    add_engine_arg(ap)
    args = ap.parse_args()

    svc = {"thread_num": THREADS, "instance_num": 1}
    svc.update(ENGINES[args.engine])
    crops = crops_dir()
    os.makedirs(RESULTS_DIR, exist_ok=True)
    runs = {"on": (32, "batching on (max_batch_size 32)"), "off": (1, "batching off (max_batch_size 1)")}
    paths = {
        k: derive_config(args.config, tag=f"curve-{k}", ops={args.op: {**svc, "max_batch_size": size}})
        for k, (size, _) in runs.items()
    }
    name = pipeline_name(paths["on"])
    docs: dict = {}
    # both servers up; each level is measured on one then the other (order alternating), so
    # the machine's background load drifts equally over both curves
    with served(paths["on"]) as on_srv, served(paths["off"]) as off_srv:
        servers = {"on": on_srv, "off": off_srv}
        if args.prime > 0:
            payloads = image_payloads(bench_crops())
            for srv in servers.values():
                closed_loop(srv.url, name, payloads, 32, args.prime, 0.0)
        levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
        for i, c in enumerate(levels):
            for key in ("on", "off") if i % 2 == 0 else ("off", "on"):
                out = os.path.join(RESULTS_DIR, f"rec_curve_{key}_c{c}.json")
                cmd = [
                    sys.executable,
                    "-m",
                    "serving.cli",
                    "bench",
                    "--url",
                    servers[key].url,
                    "--pipeline",
                    name,
                    "--inputs",
                    crops,
                    "--concurrency",
                    str(c),
                    "--duration",
                    str(args.duration),
                    "--warmup",
                    str(args.warmup),
                    "--json",
                    out,
                    "--label",
                    runs[key][1],
                ]
                print("$ batchline " + " ".join(cmd[3:]), flush=True)
                proc = subprocess.run(cmd, cwd=ROOT)
                if proc.returncode != 0:
                    raise BenchError(f"batchline bench exited with {proc.returncode}")
                with open(out, encoding="utf-8") as f:
                    doc = json.load(f)
                os.remove(out)
                if key not in docs:
                    docs[key] = doc
                else:
                    docs[key]["levels"].extend(doc["levels"])
    summary = {}
    for key, doc in docs.items():
        doc["url"] = None
        with open(os.path.join(RESULTS_DIR, f"rec_curve_{key}.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False)
        summary[key] = {lv["concurrency"]: lv["qps"] for lv in doc["levels"]}
    top = max(summary["on"])
    ratio = summary["on"][top] / summary["off"][top]
    print(f"RATIO rec batching on/off at {top} clients = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    run_main(main)
