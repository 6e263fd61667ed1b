"""Full OCR: the per-image Python work against the model time, step by step.

Runs the det and rec ops of configs/ocr.yml in this process (the server's own
hooks, one thread predictor each with the config's ``thread_num``) over the
12 sample pages (tests/data/ocr/sample), each page as the server does it:
det expand + preprocess, det run, DB post-processing (split into PaddleOCR's
``DBPostProcess``, its box filter and reading order), crops, rec expand
(PaddleOCR's padded widths) + preprocess (resize + normalise), rec collate
(padding), rec run, CTC decode, merge. Every step is timed in rounds (all
pages, then again) and the median per page is kept; the table gives ms per
page and each step's share of the whole.

    python bench/ocr_page_work.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import derive_config  # noqa: E402
from bench.lib.engines import ENGINES, add_engine_arg  # noqa: E402
from bench.lib.inprocess import make_op  # noqa: E402
from bench.lib.inputs import decode_png, sample_page_pngs  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402

MODEL_STEPS = ("det: predictor run", "rec: predictor runs")


class Clock:
    """Seconds per step name for one page."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    def __call__(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        out = fn()
        self.spent[name] += time.perf_counter() - t0
        return out


def one_page(det: Any, det_runner: Any, rec: Any, rec_runner: Any, image: Any, clock: Clock) -> list[dict]:
    """One page through det then rec, as the engine calls the hooks (one request, alone)."""
    import numpy as np

    from ops.image import box_to_list, crop_boxes, filter_tag_det_res, sorted_boxes
    from serving.engine.execute import predictor_calls

    det_inputs = {"input": image}
    (det_item,) = clock("det: expand + preprocess", lambda: [det.preprocess(p) for p in det.expand(det_inputs)])
    (sub,) = clock("det: collate", lambda: list(predictor_calls(det, [det_item], [])))
    outputs = clock("det: predictor run", lambda: det_runner.run(sub.feed))
    (prob,) = clock("det: uncollate", lambda: det.uncollate(sub, outputs))
    # det.postprocess, split into its three parts
    post = clock("det: DBPostProcess (contours, scores, unclip)", lambda: det._post({"maps": prob}, [det_item.shape]))
    boxes = clock("det: filter boxes", lambda: filter_tag_det_res(post[0]["points"], det_item.src_hw))
    box_lists = clock(
        "det: reading order + box lists",
        lambda: [box_to_list(b) for b in sorted_boxes(np.asarray(boxes))] if len(boxes) else [],
    )
    det_out = {"image": det_item.source, "boxes": box_lists, "box_type": "quad"}
    rec_inputs = {"det": det_out}
    crops = clock("crops (perspective warps)", lambda: crop_boxes(det_out["image"], box_lists, "quad"))
    det_out["crops"] = crops
    payloads = clock("rec: expand (PaddleOCR pad widths)", lambda: list(rec.expand(rec_inputs)))
    items = clock("rec: preprocess (resize + normalise)", lambda: [rec.preprocess(p) for p in payloads])
    sizes = rec.conf.local_service_conf.predictor_batch_sizes
    subs = clock("rec: collate (padding)", lambda: list(predictor_calls(rec, items, sizes)))
    results: list[Any] = [None] * len(items)
    for s in subs:
        outs = clock("rec: predictor runs", lambda s=s: rec_runner.run(s.feed))
        per_item = clock("rec: uncollate", lambda s=s, outs=outs: rec.uncollate(s, outs))
        for i, out in zip(s.indices, per_item):
            results[i] = clock("rec: CTC decode", lambda i=i, out=out: rec.postprocess(items[i], out))
    return clock("rec: merge", lambda: rec.merge(rec_inputs, results))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ocr")
    ap.add_argument("--rounds", type=int, default=5, help="passes over the pages (median per page)")
    add_engine_arg(ap)
    args = ap.parse_args()

    svc = {"instance_mode": "thread", "instance_num": 1, **ENGINES[args.engine]}
    config = derive_config(args.config, tag="page-work", all_ops=svc)
    det, (det_runner,) = make_op(config, "det")
    rec, (rec_runner,) = make_op(config, "rec")
    pages = [decode_png(p) for p in sample_page_pngs()]
    per_page: dict[str, list[float]] = defaultdict(list)
    lines = 0
    for r in range(args.rounds + 1):  # round 0 warms every shape
        for image in pages:
            clock = Clock()
            t0 = time.perf_counter()
            out = one_page(det, det_runner, rec, rec_runner, image, clock)
            total = time.perf_counter() - t0
            if r == 0:
                lines += len(out)
                continue
            for k, v in clock.spent.items():
                per_page[k].append(v)
            per_page["total"].append(total)
    n = len(pages)
    # per step: the mean over pages of each page's median over rounds, in ms
    table = {}
    for k, v in per_page.items():
        by_page = [statistics.median(v[i::n]) for i in range(n)]
        table[k] = 1000 * sum(by_page) / n
    total = table.pop("total")
    model = sum(table.get(k, 0.0) for k in MODEL_STEPS)
    python = sum(v for k, v in table.items() if k not in MODEL_STEPS)
    print(f"{n} sample pages, {lines / n:.1f} text lines per page; ms per page (mean of per-page medians)")
    print(f"{'step':50s} {'ms/page':>8s} {'share':>7s}")
    for k, v in table.items():
        print(f"  {k:48s} {v:8.2f} {v / total:7.1%}")
    print(f"  {'total':48s} {total:8.2f}")
    print(f"model {model:.2f} ms ({model / total:.1%}), per-image Python {python:.2f} ms ({python / total:.1%})")
    write_result("ocr_page_work", {"args": vars(args), "ms_per_page": table, "total_ms": total, "lines": lines / n})
    print(f"RATIO per-image Python share = {python / total:.3f}")
    return 0


if __name__ == "__main__":
    run_main(main)
