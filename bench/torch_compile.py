"""What ``torch_compile`` is worth: ``engine: torch`` instances with and without it, side by
side, on the same inputs, after the shape has compiled.

On the CPU: the module (what ``engine: torch`` runs by default) against the compiled plan,
timed with ``runner.run`` (copies in and out, as a server calls it). On a GPU also CUDA
graphs of the plan (``cuda_graphs``, configs/ocr_gpu.yml) and of the compiled plan, timed
with CUDA events around the computation on device inputs. Rounds alternate the order of
the variants. Prints ms per call, each variant's speed-up over the module (and on a GPU over
graphs of the plan), the seconds the compile took and the largest difference from the
module's output; writes torch_compile.json (bench/results, or --out).

    python -m bench.torch_compile [--only rec,det,cls] [--rounds 4 --calls 3] [--cold-cache]
    python -m bench.torch_compile --device cuda --prepared gpu-carry --out OUT   # on a GPU host

Shapes: on the CPU rec 8 x 320 px, det one 640 px page, cls 8 crops; on a GPU, the goals'
shapes (rec 128 x 320 px, det 8 pages of 960 px) at --precision (fp16 there by default).
``det_masked``: det with ``mask_padding`` (configs/ocr_gpu.yml's det), every other page of
a smaller extent: beside ``det``, what the masks cost.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

if __name__ == "__main__" and not __package__:
    from _as_module import rerun_as_module  # bench/ is on the path of a script run as a file

    rerun_as_module(__file__)

import numpy as np  # noqa: E402

from bench.lib.call_speed import interleaved_call_ms, wall_call_ms  # noqa: E402
from bench.lib.results import RESULTS_DIR, write_result  # noqa: E402
from bench.lib.script import BenchError, chosen, first_line, run_main  # noqa: E402


@dataclass(frozen=True)
class Case:
    model: str
    batch: int
    size: int  # det's side, or rec's and cls's width
    keys: Mapping[str, Any] = field(default_factory=dict)  # local_service_conf keys of every torch variant


MASKED = {"mask_padding": True}
CASES: Mapping[str, Mapping[str, Case]] = {
    "cpu": {
        "rec": Case("rec", 8, 320),
        "det": Case("det", 1, 640),
        "cls": Case("cls", 8, 192),
        "det_masked": Case("det", 1, 640, MASKED),  # beside det: what mask_padding costs (configs/ocr_gpu.yml's det)
    },
    "cuda": {
        "rec": Case("rec", 128, 320),
        "det": Case("det", 8, 960),
        "det_masked": Case("det", 8, 960, MASKED),
    },
}
# variant -> its local_service_conf keys; the first is the baseline. On the CPU, OpenVINO
# (the shipped CPU engine) for scale.
VARIANTS: Mapping[str, Mapping[str, Mapping[str, Any]]] = {
    "cpu": {
        "module": {},
        "compiled": {"torch_compile": True},
        "openvino": {"engine": "openvino", "use_openvino": False},
    },
    "cuda": {
        "module": {},
        "graphs": {"cuda_graphs": True},
        "compiled": {"torch_compile": True},
        "compiled+graphs": {"cuda_graphs": True, "torch_compile": True},
    },
}
# calls of a shape before its compile is awaited: the module's, then the plan's (which sends it)
PREPARING_CALLS = 3


def feed_for(case: Case) -> dict[str, np.ndarray]:
    """The fixed random inputs; with masks, every other page's extent smaller (pages of mixed sizes)."""
    from bench.lib.gpu.probe_models import random_feed
    from serving.op import extent_input

    feed = random_feed(case.model, case.batch, case.size, 128, rec_width=case.size)
    if case.keys.get("mask_padding"):
        smaller = (case.size // 64 * 32, case.size * 3 // 128 * 32)  # multiples of det's stride
        feed[extent_input("x")] = np.asarray(
            [(case.size, case.size) if k % 2 == 0 else smaller for k in range(case.batch)], dtype=np.int64
        )
    return feed


def runner_for(model: str, device: str, precision: str, keys: Mapping[str, Any], budget_s: float) -> Any:
    from bench.lib.gpu.probe_models import model_dir
    from serving.config.schema import LocalServiceConf
    from serving.runners.runner_modules import load_one

    on_gpu = device == "cuda"
    settings: dict[str, Any] = {"engine": "torch", **keys}
    if settings.get("torch_compile"):
        settings["torch_compile_budget_s"] = budget_s
    conf = LocalServiceConf(
        model_config=model_dir(model),
        device_type=1 if on_gpu else 0,
        devices="0" if on_gpu else "",
        precision=precision,
        thread_num=1 if on_gpu else (os.cpu_count() or 1),
        **settings,
    )
    return load_one(conf)


def prepared(runner: Any, feed: Mapping[str, np.ndarray], budget_s: float) -> float | None:
    """Run the shape until its form is ready; the seconds its compile took (None: not compiled)."""
    for _ in range(PREPARING_CALLS):
        runner.run(feed)
    compiler = getattr(runner, "compiler", None)
    if compiler is None:
        return None
    if not compiler.wait(budget_s + 60):
        raise BenchError(f"the compile did not end within {budget_s + 60:.0f}s")
    runner.run(feed)  # the call that switches to the compiled plan
    if runner.buckets.compiled != 1:
        raise BenchError("the shape did not compile (the log says why)")
    return compiler.spent_s


def call_ms(runner: Any, feed: Mapping[str, np.ndarray], device: str, calls: int) -> list[float]:
    if device == "cuda":
        from bench.lib.gpu.probe_curves import event_times

        return event_times(runner, feed, 1, calls)
    return wall_call_ms(runner, feed, calls)


def variants_of(case: Case, device: str) -> dict[str, dict[str, Any]]:
    """The case's variants and their keys: with a torch setting (masks), each torch variant
    with it and, beside it, without (what the setting costs); no other engine's, nor one
    whose runtime is not installed (OpenVINO on a GPU host's CPU)."""
    out: dict[str, dict[str, Any]] = {}
    for name, keys in VARIANTS[device].items():
        engine = keys.get("engine", "torch")
        if engine != "torch" and importlib.util.find_spec(engine) is None:
            continue
        if not case.keys:
            out[name] = dict(keys)
        elif engine == "torch":
            out[name] = {**keys, **case.keys}
            out[f"{name}, without {'+'.join(case.keys)}"] = dict(keys)
    return out


def measure_case(case: Case, args: argparse.Namespace) -> dict[str, Any]:
    feed = feed_for(case)
    variants = variants_of(case, args.device)
    runners: dict[str, Any] = {}
    row: dict[str, Any] = {
        "model": case.model,
        "batch": case.batch,
        "size": case.size,
        "keys": dict(case.keys),
        "precision": args.precision,
        "variants": {},
    }

    def fed(runner: Any) -> dict[str, np.ndarray]:  # a model without masks takes no extents
        return {name: value for name, value in feed.items() if name in runner.input_names}

    # compared where every variant computes the same: with masks, the pages of whole extent
    whole = slice(None, None, 2) if case.keys.get("mask_padding") else slice(None)
    try:
        for name, keys in variants.items():
            runner = runner_for(case.model, args.device, args.precision, keys, args.budget_s)
            runners[name] = runner
            began = time.perf_counter()
            compile_s = prepared(runner, fed(runner), args.budget_s)
            row["variants"][name] = {"compile_s": compile_s, "prepare_s": round(time.perf_counter() - began, 1)}
        outputs = {name: r.run(fed(r))[0][whole] for name, r in runners.items()}
        ms = interleaved_call_ms(
            runners,
            feed,
            calls=args.calls,
            rounds=args.rounds,
            timer=lambda runner, n: call_ms(runner, fed(runner), args.device, n),
        )
    finally:
        for r in runners.values():
            r.close()
    baseline = next(iter(runners))
    for name in runners:
        row["variants"][name].update(
            ms=round(ms[name], 3),
            speedup_vs_module=round(ms[baseline] / ms[name], 2),
            max_abs_diff_vs_module=float(np.max(np.abs(outputs[name] - outputs[baseline]))),
        )
    if "graphs" in ms:
        for name in runners:
            row["variants"][name]["speedup_vs_graphs"] = round(ms["graphs"] / ms[name], 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=sorted(CASES), default="cpu")
    ap.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default=None, help="fp32 on a CPU, fp16 on a GPU")
    ap.add_argument("--only", default="", help="cases, comma-separated (default: every one of the device's)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=3, help="timed calls per variant per round")
    ap.add_argument("--budget-s", type=float, default=600.0, help="torch_compile_budget_s of the compiled variants")
    ap.add_argument("--prepared", default="", help="a folder `bench.gpu_probe --prepare` filled: its ONNX cache")
    ap.add_argument(
        "--cold-cache",
        action="store_true",
        help="compile into a fresh Inductor cache (TORCHINDUCTOR_CACHE_DIR): a first start's compile times",
    )
    ap.add_argument("--out", default=RESULTS_DIR)
    args = ap.parse_args()
    if args.cold_cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="bl-inductor-")
    args.precision = args.precision or ("fp16" if args.device == "cuda" else "fp32")
    if args.prepared:
        from bench.lib.gpu.cli import ONNX_CACHE_DIR, ONNX_CACHE_ENV

        os.environ[ONNX_CACHE_ENV] = os.path.abspath(os.path.join(args.prepared, ONNX_CACHE_DIR))
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda: torch sees no CUDA device")
    cases = chosen(args.only, list(CASES[args.device]))
    rows: dict[str, Any] = {}
    device_name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    doc = {"device": device_name, "torch": torch.__version__, "cold_cache": args.cold_cache, "rows": rows}
    for model in cases:
        try:
            rows[model] = measure_case(CASES[args.device][model], args)
        except Exception as exc:  # noqa: BLE001 - a model that cannot be measured is its row; the next runs
            rows[model] = {"error": first_line(exc)}
        write_result("torch_compile", doc, args.out)
    print(f"torch_compile on {device_name} (torch {torch.__version__}), {args.precision}")
    for model, row in rows.items():
        if "error" in row:
            print(f"  {model}: could not measure: {row['error']}")
            continue
        cells = []
        for name, v in row["variants"].items():
            compiled = f", compiled in {v['compile_s']:.0f}s" if v.get("compile_s") else ""
            cells.append(f"{name} {v['ms']:.2f} ms (x{v['speedup_vs_module']:.2f}{compiled})")
        print(f"  {model} batch {row['batch']} at {row['size']}: " + "; ".join(cells))
        worst = max(v["max_abs_diff_vs_module"] for v in row["variants"].values())
        print(f"    largest |difference| from the module's output: {worst:.2e}")
        if row["keys"]:
            setting = "+".join(row["keys"])
            costs = [
                f"{name} x{v['ms'] / row['variants'][f'{name}, without {setting}']['ms']:.2f}"
                for name, v in row["variants"].items()
                if f"{name}, without {setting}" in row["variants"]
            ]
            print(f"    time with {setting} over without: " + ", ".join(costs))
    measured = {m: row["variants"]["compiled"]["speedup_vs_module"] for m, row in rows.items() if "error" not in row}
    if measured:
        speedups = ", ".join(f"{m} x{x:.2f}" for m, x in measured.items())
        print(f"RATIO engine: torch with torch_compile against without, per call on {device_name}: {speedups}")
    return 1 if any("error" in row for row in rows.values()) else 0


if __name__ == "__main__":
    run_main(main)
