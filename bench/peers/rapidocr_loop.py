"""RapidOCR's own sequential loop (decode + ``ocr()``) over the bench pages: a
benchmark peer, run inside the bench's RapidOCR virtual environment.

It loads one RapidOCR instance, reads every page once (warm-up; those answers
are reported), then waits for commands on stdin, one JSON line each, and
answers each with one JSON line on stdout:

    (started)                                -> {"ready": true, "info": {...}, "answers": [[{text, score, box}]]}
    {"run": SECONDS, "min_calls": N}         -> {"items", "seconds", "items_per_s", "latencies_s"}
    {"quit": true}                           -> (exits)

    <venv>/bin/python bench/peers/rapidocr_loop.py --engine openvino --precision fp32 --threads 2 --pages DIR
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Any

# rapidocr_build is this folder's: run by path, Python puts the script's folder first on sys.path
# (the RapidOCR venv has no batchline, so it cannot be `python -m bench.peers...`)
from rapidocr_build import (
    DET_RESIZES,
    ENGINES,
    PRECISIONS,
    make_rapidocr,
    precisions,
    read_page,
    versions,
)


def decode(data: bytes) -> Any:
    import cv2
    import numpy as np

    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def timed_loop(ocr: Any, pngs: list[bytes], seconds: float, min_calls: int) -> dict:
    """Pages in turn (decode counted, as in the servers) until ``seconds`` passed and ``min_calls`` done."""
    latencies: list[float] = []
    start = time.perf_counter()
    i = 0
    while i < min_calls or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        read_page(ocr, decode(pngs[i % len(pngs)]))
        latencies.append(time.perf_counter() - t0)
        i += 1
    elapsed = time.perf_counter() - start
    return {"items": i, "seconds": elapsed, "items_per_s": i / elapsed, "latencies_s": latencies}


def reply(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=sorted(ENGINES), default="openvino")
    ap.add_argument("--precision", choices=PRECISIONS, default="default")
    ap.add_argument("--threads", type=int, default=2, help="math threads (per model)")
    ap.add_argument("--det-resize", choices=DET_RESIZES, default="paddleocr")
    ap.add_argument("--pages", required=True, help="folder of the bench pages (*.png, read in name order)")
    args = ap.parse_args()

    pngs = []
    for path in sorted(glob.glob(os.path.join(args.pages, "*.png"))):
        with open(path, "rb") as f:
            pngs.append(f.read())
    if not pngs:
        raise SystemExit(f"no *.png in {args.pages}")
    ocr = make_rapidocr(args.engine, args.precision, args.threads, True, args.det_resize)
    answers = [read_page(ocr, decode(png)) for png in pngs]  # the warm-up pass
    info = {
        "engine": args.engine,
        "precision": args.precision,
        "precisions": precisions(ocr, args.engine),
        "pool": 1,
        "threads": args.threads,
        "det_resize": args.det_resize,
        "versions": versions(args.engine),
    }
    reply({"ready": True, "info": info, "answers": answers})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        reply(timed_loop(ocr, pngs, float(cmd["run"]), int(cmd.get("min_calls", 1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
