"""OpenVINO's convolution kernels (``conv_kernels``): ``auto`` against ``jit``, per op.

The det and rec ops of configs/ocr.yml on OpenVINO Runtime (one instance),
fed what they meet serving the 24 bench pages: each page's det input, and
the rec calls its crops make (PaddleOCR's padding groups). For each op and
each ``--threads`` count, both kernel choices are loaded side by side and
timed in interleaved rounds (auto, jit, jit, auto, ...); the best round per
choice gives ms per page. It also checks that both choices give the same
answer: rec's best character at every position, det's map within 1e-3.

    python bench/conv_kernels.py [--rounds 4 --threads 1,2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import derive_config  # noqa: E402
from bench.lib.inprocess import make_op  # noqa: E402
from bench.lib.inputs import decode_png, document_pngs  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402

CHOICES = ("auto", "jit")


def op_feeds(pages: list[Any]) -> dict[str, list[dict]]:
    """The predictor feeds each op receives for ``pages``, one page at a time
    (det: the page; rec: its crops in PaddleOCR's padding groups)."""
    from ops.image import crop_boxes
    from serving.engine.execute import predictor_calls

    config = derive_config("ocr", tag="conv-kernels", all_ops={"instance_mode": "thread", "instance_num": 1})
    det, (det_runner,) = make_op(config, "det")
    rec, _ = make_op(config, "rec", instances=0)
    feeds: dict[str, list[dict]] = {"det": [], "rec": []}
    for image in pages:
        (item,) = [det.preprocess(p) for p in det.expand({"input": image})]
        (call,) = list(predictor_calls(det, [item], []))
        feeds["det"].append(call.feed)
        (prob,) = det.uncollate(call, det_runner.run(call.feed))
        det_out = det.merge({"input": image}, [det.postprocess(item, prob)])
        det_out["crops"] = crop_boxes(det_out["image"], det_out["boxes"], det_out["box_type"])
        items = [rec.preprocess(p) for p in rec.expand({"det": det_out})]
        feeds["rec"] += [c.feed for c in predictor_calls(rec, items, [])]
    det_runner.close()
    return feeds


def runner(op: str, kernels: str, threads: int) -> Any:
    svc = {"instance_mode": "thread", "instance_num": 1, "thread_num": threads}
    config = derive_config("ocr", tag="conv-kernels", all_ops=svc, ops={op: {"conv_kernels": kernels}})
    return make_op(config, op)[1][0]


def timed(run: Any, feeds: list[dict]) -> float:
    t0 = time.perf_counter()
    for feed in feeds:
        run.run(feed)
    return time.perf_counter() - t0


def same_answers(op: str, a: list[Any], b: list[Any]) -> bool:
    import numpy as np

    if op == "rec":
        return all((x[0].argmax(-1) == y[0].argmax(-1)).all() for x, y in zip(a, b))
    return all(np.abs(x[0] - y[0]).max() <= 1e-3 for x, y in zip(a, b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="timed passes per choice (interleaved)")
    ap.add_argument("--threads", default="1,2", help="thread_num values, comma separated")
    ap.add_argument("--pages", type=int, default=24)
    args = ap.parse_args()

    pages = [decode_png(p) for p in document_pngs(args.pages)]
    feeds = op_feeds(pages)
    print(f"{len(pages)} pages: {len(feeds['det'])} det calls, {len(feeds['rec'])} rec calls", flush=True)
    rows = []
    for op in ("det", "rec"):
        for threads in (int(t) for t in args.threads.split(",")):
            runs = {k: runner(op, k, threads) for k in CHOICES}
            answers = {k: [r.run(f) for f in feeds[op]] for k, r in runs.items()}  # also warms every shape
            best = dict.fromkeys(CHOICES, float("inf"))
            for i in range(args.rounds):
                for k in CHOICES if i % 2 == 0 else CHOICES[::-1]:
                    best[k] = min(best[k], timed(runs[k], feeds[op]))
            ms = {k: 1000 * v / len(pages) for k, v in best.items()}
            row = {
                "op": op,
                "threads": threads,
                "auto_ms_per_page": ms["auto"],
                "jit_ms_per_page": ms["jit"],
                "jit_speedup": ms["auto"] / ms["jit"],
                "same_answers": bool(same_answers(op, answers["auto"], answers["jit"])),
            }
            rows.append(row)
            print(
                f"{op} {threads} thread(s): auto {ms['auto']:.1f} ms/page, jit {ms['jit']:.1f} ms/page, "
                f"same answers {row['same_answers']}",
                flush=True,
            )
            for r in runs.values():
                r.close()
    write_result("conv_kernels", {"args": vars(args), "rows": rows})
    for row in rows:
        print(f"RATIO {row['op']} {row['threads']}t auto/jit time = {row['jit_speedup']:.3f}")
    return 0


if __name__ == "__main__":
    run_main(main)
