"""Experiment: does serialising CPU work with predictor runs help on a small box?

With ``thread_num`` = cores, a predictor's OpenMP team stalls whenever
anything else runs on a core -- and in the server, image decode, det
preprocess (cv2 + numpy, which release the GIL) and crops of *other*
requests do run while ``run()`` holds the GIL. This script serves
configs/ocr.yml twice, side by side, interleaved rounds at ``--clients``:

* ``stock``: the ops as they are;
* ``exclusive``: the same ops subclassed here (:class:`ExclusiveDet`,
  :class:`ExclusiveRec`) so that ``preprocess``, ``run`` and ``postprocess``
  take one process-wide lock: at most one of them at a time.

It changes nothing in serving/ or ops/: it measures what an engine-level
"one compute task at a time" option would buy.

    python bench/exclusive_compute.py [--clients 8 --duration 12 --rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import apply_overrides, load_repo_config, pipeline_name, write_config  # noqa: E402
from bench.lib.engines import ENGINES, THREADS  # noqa: E402
from bench.lib.inputs import document_pngs  # noqa: E402
from bench.lib.measure import answered, closed_loop, image_payloads  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402
from ops.ocr_det import OcrDetOp  # noqa: E402
from ops.ocr_rec import OcrRecOp  # noqa: E402

_COMPUTE = threading.Lock()


class _Exclusive:
    def preprocess(self, payload):
        with _COMPUTE:
            return super().preprocess(payload)

    def run(self, runner, feed):
        with _COMPUTE:
            return super().run(runner, feed)

    def postprocess(self, item, output):
        with _COMPUTE:
            return super().postprocess(item, output)


class ExclusiveDet(_Exclusive, OcrDetOp):
    pass


class ExclusiveRec(_Exclusive, OcrRecOp):
    pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=12.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prime", type=float, default=8.0)
    args = ap.parse_args()

    svc = {"thread_num": THREADS, **ENGINES["onednn"]}
    base = load_repo_config("ocr")
    stock = write_config(apply_overrides(base, all_ops=svc), tag="stock")
    excl_conf = apply_overrides(base, all_ops=svc)
    excl_conf["op"]["det"]["class"] = "bench.exclusive_compute:ExclusiveDet"
    excl_conf["op"]["rec"]["class"] = "bench.exclusive_compute:ExclusiveRec"
    excl = write_config(excl_conf, tag="exclusive")
    name = pipeline_name(stock)
    payloads = image_payloads(document_pngs(24))
    runs: dict = {"stock": [], "exclusive": []}
    with served(stock) as s, served(excl) as e:
        servers = {"stock": s, "exclusive": e}
        for srv in servers.values():
            closed_loop(srv.url, name, payloads, args.clients, args.prime, 0.0)
        for rnd in range(args.rounds):
            for k in ("stock", "exclusive") if rnd % 2 == 0 else ("exclusive", "stock"):
                r = closed_loop(servers[k].url, name, payloads, args.clients, args.duration, args.warmup)
                runs[k].append(r)
                ops = " ".join(
                    f"{o}[batch {v.get('mean_batch_size') or 0:.1f} run {v.get('mean_run_ms') or 0:.0f}ms]"
                    for o, v in r.get("op_stats", {}).items()
                )
                print(f"round {rnd} {k:9s}: {r['qps']:.2f} images/s  {ops}", flush=True)
    rate = {k: sum(answered(r) for r in v) / sum(r["duration_s"] for r in v) for k, v in runs.items()}
    ratio = rate["exclusive"] / rate["stock"]
    write_result("exclusive_compute", {"args": vars(args), "images_per_s": rate, "ratio": ratio, "runs": runs})
    print(f"RATIO exclusive compute / stock = {ratio:.2f}x ({rate['exclusive']:.2f} vs {rate['stock']:.2f} images/s)")
    return 0


if __name__ == "__main__":
    run_main(main)
