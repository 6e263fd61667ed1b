"""The GPU check's command line and its steps, in order: environment (or refusal),
batch curves in process, then the servers (the GPU config with batching on and off, and the
CPU reference: :mod:`.reference`) for the lines and the served load, then the JSON and
markdown written to ``--out``."""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, replace
from typing import Any

from bench.lib.results import write_result
from bench.lib.script import BenchError
from serving.runners.gpus import Gpus
from serving.runners.onnx_export import CACHE_ENV

from . import busy, configs, device, lines, load, plan, reference, report

RESULT = "gpu_check"
# where a carried ONNX cache is looked up: the variable serving/runners/onnx_export.py reads
ONNX_CACHE_ENV = CACHE_ENV
ONNX_CACHE_DIR = "onnx-cache"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.gpu_check",
        description="configs/ocr_gpu.yml on one GPU: lines against PaddleOCR, batch curves, served load on/off",
    )
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda (default; refused without a GPU)")
    ap.add_argument("--quick", action="store_true", help="the same steps, tiny: 2 pages, levels 1 and 8, batches 1-4")
    ap.add_argument("--out", help="folder for gpu_check.json and gpu_check.md")
    ap.add_argument("--engine", default="", help="run every op on this engine instead (drops keys it refuses)")
    ap.add_argument(
        "--instance-mode",
        default="",
        choices=("", "thread", "process", "device_process"),
        help="every op in this instance_mode instead (process: one per op, against the shipped one per device)",
    )
    ap.add_argument(
        "--cpu-reference",
        default="auto",
        choices=reference.CHOICES,
        help="configs/ocr.yml served on 2 of this host's cores beside the GPU servers, on this engine "
        f"(auto: the first of {', '.join(reference.ENGINES)} installed; none: no reference)",
    )
    ap.add_argument("--levels", default="", help="closed-loop client levels, e.g. 1,8,32,64 (default: the plan's)")
    ap.add_argument("--duration", type=float, default=0.0, help="measured seconds per level (default: the plan's)")
    ap.add_argument("--prepared", default="", help="a folder --prepare filled: its ONNX cache and commit are used")
    ap.add_argument("--prepare", default="", metavar="DIR", help="fill DIR with what travels to a GPU host, and stop")
    return ap


def chosen_plan(args: argparse.Namespace) -> plan.Plan:
    picked = (plan.QUICK if args.quick else plan.FULL).with_levels(args.levels)
    return replace(picked, duration_s=args.duration) if args.duration > 0 else picked


def main() -> int:
    args = parser().parse_args()
    if args.prepare:
        from .prepare import prepare

        return prepare(args.prepare)
    if not args.out:
        raise BenchError("--out DIR is needed (where gpu_check.json and gpu_check.md go)")
    device.require_device(args.device)
    started = time.perf_counter()
    if args.prepared:
        os.environ[ONNX_CACHE_ENV] = os.path.abspath(os.path.join(args.prepared, ONNX_CACHE_DIR))
    env = device.environment(args.device, args.prepared or None)
    print(device.summary_line(env), flush=True)
    steps = chosen_plan(args)
    doc: dict[str, Any] = {
        "config": f"configs/{configs.CONFIG}.yml",
        "engine": args.engine or "as configured",
        "quick": args.quick,
        "plan": asdict(steps),
        "environment": env,
        "steps_s": {},
    }
    try:
        run_check(args, steps, doc)
    except Exception as exc:  # noqa: BLE001 - a GPU is lent rarely: what was measured before a failure is kept
        doc["failed"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        raise BenchError(f"{doc['failed']} (what was measured before is in {args.out})") from exc
    finally:
        doc["elapsed_s"] = round(time.perf_counter() - started, 1)
        write_outputs(args.out, doc)
    ok = all(r["ok"] for r in doc["lines"].values())
    print(f"lines {'ok' if ok else 'FAILED'}; {doc['elapsed_s']:.0f} s; results in {args.out}", flush=True)
    return 0 if ok else 1


class Steps:
    """Seconds each step took, into the document: the 8 minutes a GPU run gets are spent here."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds
        self._last = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._last, 1)
        self._last = now


def run_check(args: argparse.Namespace, steps: plan.Plan, doc: dict[str, Any]) -> None:
    """Every measurement of one run, into ``doc`` step by step (a failure keeps the ones before)."""
    from bench.lib.server import served_together

    timer = Steps(doc["steps_s"])
    data = configs.check_config(args.device, args.engine or None, steps.max_batch_size, args.instance_mode or None)
    doc["ops"] = {name: op["local_service_conf"] for name, op in data["op"].items()}
    names = configs.pipeline_names(data)
    repositories = configs.served_repositories(data)
    print(f"configs: {repositories['on']} (batching on), {repositories['off']} (off)", flush=True)
    cpus = reference_server(args.cpu_reference, names["ocr"], steps, repositories, doc)
    doc["curves"], crops = batch_curves(configs.ocr_file(repositories["on"]), steps)
    doc["rec_crops"] = len(crops)
    timer.done("curves")
    with served_together(repositories, cpus=cpus) as servers:
        timer.done("servers_start")
        urls = {key: server.url for key, server in servers.items()}
        doc["lines"] = line_checks(urls, names["ocr"], steps)
        timer.done("lines")
        doc["load"] = served_load(urls, names, steps, crops, busy.gpus_for(args.device))
        timer.done("load")
    if "reference" in doc:
        doc["reference"]["ocr_on_over_cpu"] = report.over_reference(doc["load"]["ocr"])


def reference_server(
    choice: str, name: str, steps: plan.Plan, repositories: dict[str, str], doc: dict[str, Any]
) -> dict[str, list[int]]:
    """The CPU reference's repository into ``repositories`` (as ``cpu``) and what it is into
    ``doc``; returns the CPUs it is to be served on (nothing without a reference)."""
    engine = reference.reference_engine(choice)
    if engine is None:
        return {}
    data = reference.reference_config(engine, name, steps.max_batch_size)
    repositories[reference.KEY] = configs.write_repository(data, reference.KEY, with_rec=False)
    cpus = reference.distinct_cores()
    doc["reference"] = reference.describe(engine, cpus)
    print(f"CPU reference: configs/{reference.CONFIG}.yml on {engine}, CPUs {cpus}", flush=True)
    return {reference.KEY: cpus}


def line_checks(urls: dict[str, str], name: str, steps: plan.Plan) -> dict[str, Any]:
    """The pages' lines from each server: batching off one page after another, the others
    (batching on, the CPU reference) with every page in flight at once (crops of different
    pages share rec's calls)."""
    pngs = lines.page_pngs(steps.pages)
    checked = {
        key: lines.line_check(steps.pages, lines.served_answers(url, name, pngs, key != "off"))
        for key, url in urls.items()
    }
    for key, result in checked.items():
        print(f"lines, {key}: {result['matched']}/{result['lines']} identical", flush=True)
    return checked


def served_load(
    urls: dict[str, str], names: dict[str, str], steps: plan.Plan, crops: list[bytes], gpus: Gpus | None = None
) -> dict[str, Any]:
    """The OCR pipeline on the pages, then the rec pipeline on det's crops of them (with
    ``gpus``, how busy they were at each level)."""
    from bench.lib.measure import image_payloads

    inputs = {"ocr": lines.page_pngs(steps.pages), "rec": crops}
    # the CPU reference serves the OCR pipeline only
    servers = {"ocr": urls, "rec": {key: urls[key] for key in configs.BATCHING}}
    return {
        pipeline: load.levels(
            servers[pipeline],
            names[pipeline],
            image_payloads(inputs[pipeline]),
            steps.levels,
            steps.duration_s,
            steps.warmup_s,
            progress,
            gpus,
        )
        for pipeline in ("ocr", "rec")
    }


def batch_curves(config_path: str, steps: plan.Plan) -> tuple[dict[str, Any], list[bytes]]:
    """det's and rec's curves, and (while det is loaded) the crops det finds on the pages, as PNGs."""
    from .curves import curve, det_item, loaded, page_crops, rec_item

    pages = lines.page_images(steps.pages)
    # det's curve on the largest page: the shape most of det's time goes to
    largest = max(pages, key=lambda page: page.shape[0] * page.shape[1])
    with loaded(config_path, "det") as det:
        det_curve = curve(det, det_item(det, largest), steps.det_sizes, steps.curve_warmup, steps.curve_repeats)
        found = [page_crops(det, page) for page in pages]
    with loaded(config_path, "rec") as rec:
        crops = [crop for page_crops_ in found for crop in page_crops_]
        rec_curve = curve(rec, rec_item(rec, crops), steps.rec_sizes, steps.curve_warmup, steps.curve_repeats)
    for op, c in (("det", det_curve), ("rec", rec_curve)):
        print(f"{op} curve: " + ", ".join(f"{p['batch']}: {p['ms']:.1f} ms" for p in c["points"]), flush=True)
    return {"det": det_curve, "rec": rec_curve}, [png_of(crop) for crop in crops]


def png_of(image: Any) -> bytes:
    import cv2

    ok, buf = cv2.imencode(".png", image)
    if not ok:
        raise BenchError("could not encode a text crop as PNG")
    return buf.tobytes()


def progress(name: str, clients: int, server: str, summary: dict[str, Any]) -> None:
    if "error" in summary:
        print(f"  {name} {clients:>3} clients, {server:<3}: {summary['error']}", flush=True)
        return
    gpu = busy.busiest(summary.get("gpu"))
    print(
        f"  {name} {clients:>3} clients, {server:<3}: {summary['req_per_s']:8.1f} req/s, "
        f"p99 {summary['p99_ms']:7.1f} ms, failed {summary['failed']}"
        + (f", GPU busy {gpu:.0f}%" if gpu is not None else ""),
        flush=True,
    )


def write_outputs(out: str, doc: dict[str, Any]) -> None:
    """gpu_check.json (the document, with the machine) and gpu_check.md in ``out``."""
    path = write_result(RESULT, doc, results_dir=out)
    with open(path, encoding="utf-8") as f:
        written = json.load(f)
    with open(os.path.join(out, f"{RESULT}.md"), "w", encoding="utf-8") as f:
        f.write(report.markdown(written))
    print(report.markdown(written), flush=True)
