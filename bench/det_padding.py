"""What padding det's pages costs in lines, and what masking it saves: configs/ocr_gpu.yml's
det -> rec on the CPU, in this process, over the 12 committed sample pages, one page at a
time (``--together``: det runs them as one batch, grouped as its collate groups them), for
det at PaddleOCR's size, padded in two ways, and padded with the model masking the padding
(``mask_padding``, as shipped); for each, how many of PaddleOCR 2.10's lines
(tests/data/ocr/answers.json) are read identically (the text; boxes are not compared),
which are not, and how many det runs read the pages.

    python -m bench.det_padding [--engine torch|onnxruntime|openvino] [--only exact,buckets,step64,masked] [--together]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from bench.lib.results import write_result
from bench.lib.script import chosen, run_main
from serving.config.engines import foreign_keys

BUCKETS = {"size_buckets": [480, 640, 800, 960], "bucket_step": 32, "max_padding_ratio": 0.5}
UNMASKED = {"mask_padding": None}
# variant -> (det's params, det's local_service_conf keys), over the shipped ones
VARIANTS: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = MappingProxyType(
    {
        # PaddleOCR's size: pages of one size batch (configs/ocr.yml's det)
        "exact": ({"size_buckets": [], "bucket_step": 32, "max_padding_ratio": 0.0}, UNMASKED),
        # pages padded into 160-px buckets, up to half a batch padding
        "buckets": (BUCKETS, UNMASKED),
        # each side rounded up to 64 px, pages of one padded size batching
        "step64": ({"size_buckets": [], "bucket_step": 64, "max_padding_ratio": 0.0}, UNMASKED),
        # the buckets, the model masking each page's padding (configs/ocr_gpu.yml; engine: torch)
        "masked": (BUCKETS, {"mask_padding": True}),
    }
)


def chain_for(det_params: Mapping[str, Any], engine: str, det_keys: Mapping[str, Any]) -> list:
    from tests.support.loaded_ops import loaded_ops

    keys = {"device_type": 0, "devices": "", "instance_mode": "thread", "instance_num": 1, "engine": engine}
    keys |= {"cuda_graphs": None, "mask_padding": None}  # the CPU's: no CUDA graphs; det's are its own
    loaded = loaded_ops("ocr_gpu.yml", {"det": {**keys, **det_keys}, "rec": keys}, params={"det": dict(det_params)})
    return [loaded["det"], loaded["rec"]]


def read_pages(chain: list, together: bool) -> tuple[dict[str, list[str]], int]:
    """Each page's lines, and how many det runs read the 12 pages; ``together``: det runs the
    12 pages as one batch (its collate groups them within max_padding_ratio), as a server with
    12 pages in flight would."""
    from serving.batching.direct import run_op_direct
    from serving.batching.execute import run_batch
    from tests.support import ocr_data

    (det, det_runner), (rec, rec_runner) = chain
    docs = ocr_data.pages("sample")
    if together:
        items = [det.preprocess(d.image) for d in docs]
        runs = len(det.collate(items))
        outputs, _ = run_batch(det, det_runner, items, run_sizes=[])
        boxes = [det.merge({"input": d.image}, [det.postprocess(i, o)]) for d, i, o in zip(docs, items, outputs)]
    else:
        boxes = [run_op_direct(det, det_runner, {"input": d.image}) for d in docs]
        runs = len(docs)
    found = {}
    for doc, page in zip(docs, boxes):
        lines = run_op_direct(rec, rec_runner, {det.name: page})
        found[doc.name] = [line["text"] for line in (json.loads(lines) if isinstance(lines, str) else lines)]
    return found, runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=["torch", "onnxruntime", "openvino"], default="torch")
    ap.add_argument("--only", default="")
    ap.add_argument("--together", action="store_true", help="det runs the 12 pages as one batch (else one by one)")
    args = ap.parse_args()
    from tests.support import ocr_data

    wanted = {p["name"]: [line["text"] for line in p["paddleocr"]] for p in ocr_data.answers()["sample"]}
    total = sum(len(lines) for lines in wanted.values())
    rows: dict[str, Any] = {}
    for variant in chosen(args.only, list(VARIANTS)):
        params, det_keys = VARIANTS[variant]
        if det_keys.get("mask_padding") and "mask_padding" in foreign_keys(args.engine):
            print(f"{variant:8} skipped: engine {args.engine} cannot mask the padding")
            continue
        read, runs = read_pages(chain_for(params, args.engine, det_keys), args.together)
        misses = {
            name: {
                "paddleocr": [t for t in lines if t not in read[name]],
                "read": [t for t in read[name] if t not in lines],
            }
            for name, lines in wanted.items()
            if any(t not in read[name] for t in lines)
        }
        same = total - sum(len(m["paddleocr"]) for m in misses.values())
        rows[variant] = {
            "params": dict(params),
            "keys": dict(det_keys),
            "identical": same,
            "det_runs": runs,
            "lines": total,
            "misses": misses,
        }
        print(f"{variant:8} {same} of {total} of PaddleOCR's lines read identically; det ran {runs} time(s)")
        for name, miss in misses.items():
            print(f"         {name}: PaddleOCR {miss['paddleocr']} / read {miss['read']}")
    write_result("det_padding", {"engine": args.engine, "together": args.together, "rows": rows})
    if rows:
        counts = ", ".join(f"{v} {r['identical']}/{r['lines']} in {r['det_runs']} det runs" for v, r in rows.items())
        print(f"RATIO det padding, lines identical to PaddleOCR: {counts}")
    return 0


if __name__ == "__main__":
    run_main(main)
