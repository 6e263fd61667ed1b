"""What padding det's pages costs in lines: configs/ocr_gpu.yml's det -> rec on the CPU, in
this process, over the 12 committed sample pages, one page at a time, with det's padding
params as shipped (PaddleOCR's size) and as the padded alternatives a GPU config might
take; for each, how many of PaddleOCR 2.10's lines (tests/data/ocr/answers.json) are read
identically (the text; boxes are not compared) and which are not.

    python -m bench.det_padding [--engine torch|openvino] [--only exact,buckets,step64]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import chosen, run_main

# variant -> det's params over the shipped ones
VARIANTS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "exact": {},
        # the GPU config before: pages padded into 160-px buckets, up to half a batch padding
        "buckets": {"size_buckets": [480, 640, 800, 960], "bucket_step": 32, "max_padding_ratio": 0.5},
        # each side rounded up to 64 px, pages of one padded size batching
        "step64": {"size_buckets": [], "bucket_step": 64, "max_padding_ratio": 0.0},
    }
)


def chain_for(det_params: Mapping[str, Any], engine: str) -> list:
    from serving.batching.launch import make_op, runners_for
    from serving.config import parse_config
    from serving.config.load import read_config

    path = os.path.join(ROOT, "configs", "ocr_gpu.yml")
    _, data = read_config(path)
    for name in ("det", "rec"):
        svc = data["op"][name]["local_service_conf"]
        svc.update(device_type=0, devices="", instance_mode="thread", instance_num=1, engine=engine)
        svc.pop("cuda_graphs", None)
    data["op"]["det"]["params"].update(det_params)
    config = parse_config(data, path, path=path)
    chain = []
    for name in ("det", "rec"):
        op = make_op(config.op[name])
        op.load()
        chain.append((op, runners_for(op, 1)[0]))
    return chain


def read_pages(chain: list) -> dict[str, list[str]]:
    from serving.batching.direct import run_chain_direct
    from tests.support import ocr_data

    found = {}
    for doc in ocr_data.pages("sample"):
        lines = run_chain_direct(chain, doc.image)
        found[doc.name] = [line["text"] for line in (json.loads(lines) if isinstance(lines, str) else lines)]
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=["torch", "openvino"], default="torch")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    with open(os.path.join(ROOT, "tests", "data", "ocr", "answers.json"), encoding="utf-8") as f:
        pages = json.load(f)["sample"]
    wanted = {p["name"]: [line["text"] for line in p["paddleocr"]] for p in pages}
    total = sum(len(lines) for lines in wanted.values())
    rows: dict[str, Any] = {}
    for variant in chosen(args.only, list(VARIANTS)):
        read = read_pages(chain_for(VARIANTS[variant], args.engine))
        misses = {
            name: {
                "paddleocr": [t for t in lines if t not in read[name]],
                "read": [t for t in read[name] if t not in lines],
            }
            for name, lines in wanted.items()
            if any(t not in read[name] for t in lines)
        }
        same = total - sum(len(m["paddleocr"]) for m in misses.values())
        rows[variant] = {"params": dict(VARIANTS[variant]), "identical": same, "lines": total, "misses": misses}
        print(f"{variant:8} {same} of {total} of PaddleOCR's lines read identically")
        for name, miss in misses.items():
            print(f"         {name}: PaddleOCR {miss['paddleocr']} / read {miss['read']}")
    write_result("det_padding", {"engine": args.engine, "rows": rows})
    exact = rows.get("exact")
    if exact:
        print(f"RATIO det padding, lines identical to PaddleOCR: exact {exact['identical']}/{exact['lines']}")
    return 0


if __name__ == "__main__":
    run_main(main)
