"""``engine: torch`` (our ONNX interpreter on PyTorch) and ``engine: onnxruntime`` (the
well-kept runtime beside it) against OpenVINO Runtime (the shipped CPU engine) on the CPU.

One in-process instance of each, ``thread_num`` threads, the same models
(configs/ocr.yml's det and rec; torch and ONNX Runtime read the same ONNX file).
Measured side by side, rotating which engine goes first each round: rec predictor
calls at 1, 8 and 32 crops of 320 px, det at one 960 x 640 page, and the full det
-> rec chain over the 12 sample pages. Prints median ms per call for each and each
engine's ratio to OpenVINO (above 1: slower); writes bench/results/torch_cpu.json.

    python -m bench.torch_cpu [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench.lib.results import write_result
from bench.lib.script import run_main

ENGINES = {
    "openvino": {"engine": "openvino", "use_openvino": False, "precision": "fp32"},
    "torch": {"engine": "torch", "use_openvino": False, "precision": "fp32", "conv_kernels": "auto"},
    "onnxruntime": {"engine": "onnxruntime", "use_openvino": False, "precision": "fp32", "conv_kernels": "auto"},
}
OTHERS = ("torch", "onnxruntime")


def timed(fn, repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one unmeasured call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cases(engine: str, threads: int) -> dict:
    """name -> a zero-argument call, for one engine."""
    from serving.batching.direct import run_chain_direct
    from tests.support import ocr_data
    from tests.support.loaded_ops import loaded_ops

    keys = {**ENGINES[engine], "instance_mode": "thread", "instance_num": 1, "thread_num": threads}
    loaded = loaded_ops("ocr.yml", {"det": keys, "rec": keys})
    (_, det), (_, rec) = loaded["det"], loaded["rec"]
    rng = np.random.default_rng(0)
    crops = {n: rng.random((n, 3, 48, 320), dtype=np.float32) for n in (1, 8, 32)}
    page = rng.random((1, 3, 640, 960), dtype=np.float32)
    docs = ocr_data.pages("sample")
    chain = list(loaded.values())
    calls = {f"rec x{n}": (lambda x=x: rec.run({"x": x})) for n, x in crops.items()}
    calls["det 960x640"] = lambda: det.run({"x": page})
    calls["OCR, 12 pages"] = lambda: [run_chain_direct(chain, d.image) for d in docs]
    return calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    calls = {engine: cases(engine, args.threads) for engine in ENGINES}
    samples: dict[str, dict[str, list[float]]] = {e: {c: [] for c in calls[e]} for e in ENGINES}
    engines = list(ENGINES)
    for round_ in range(args.rounds):
        shift = round_ % len(engines)
        order = engines[shift:] + engines[:shift]
        for name in calls["torch"]:
            for engine in order:
                repeat = 1 if name.startswith("OCR") else 5
                samples[engine][name].append(timed(calls[engine][name], repeat))
    rows = []
    print(f"{'call':<16} {'openvino ms':>12}" + "".join(f" {e + ' ms':>16} {e + '/ov':>16}" for e in OTHERS))
    for name in calls["torch"]:
        ms = {e: statistics.median(samples[e][name]) * 1000 for e in ENGINES}
        ratios = {e: ms[e] / ms["openvino"] for e in OTHERS}
        rows.append({"call": name, **{f"{e}_ms": ms[e] for e in ENGINES}, **{f"{e}_ratio": ratios[e] for e in OTHERS}})
        print(f"{name:<16} {ms['openvino']:>12.1f}" + "".join(f" {ms[e]:>16.1f} {ratios[e]:>15.2f}x" for e in OTHERS))
    path = write_result("torch_cpu", {"threads": args.threads, "rounds": args.rounds, "rows": rows})
    print(f"wrote {path}")
    full = rows[-1]
    print(
        f"RATIO time for full OCR on the CPU: torch/openvino = {full['torch_ratio']:.2f}x, "
        f"onnxruntime/openvino = {full['onnxruntime_ratio']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    run_main(main)
