"""The GPU probe's command line: refusal without the GPU asked for, ``--prepare``, then the
steps (:data:`~.probe_plan.STEPS`, or those ``--step`` names), each in a process of its own
within its budget (:mod:`.probe_run`), gpu_probe.json and gpu_probe.md in ``--out`` rewritten
as each step ends."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import BenchError, chosen

from . import device, probe_plan, probe_report, probe_run
from .cli import ONNX_CACHE_DIR, ONNX_CACHE_ENV

RESULT = "gpu_probe"
STEPS_DIR = "steps"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench.gpu_probe",
        description="one GPU, at most 6 minutes: versions, GPU/CPU parity, fp16/bf16, a profiler trace, "
        "event-timed curves, served OCR and rec; each step within its own budget, written as it ends",
    )
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda (default; refused without a GPU)")
    ap.add_argument("--quick", action="store_true", help="every step, tiny (a 2-core CPU in about 2 minutes)")
    ap.add_argument("--out", help="folder for gpu_probe.json, gpu_probe.md, the traces and each step's log")
    ap.add_argument(
        "--step", default="", help=f"only these steps, e.g. parity,curves (of {','.join(probe_plan.STEPS)})"
    )
    ap.add_argument(
        "--timeout", action="append", default=[], metavar="STEP=S", help="a step's budget in seconds (repeatable)"
    )
    ap.add_argument("--total", type=float, default=0.0, help="the whole run's budget in seconds (default: the plan's)")
    ap.add_argument("--prepared", default="", help="a folder --prepare filled: its ONNX cache and commit are used")
    ap.add_argument("--prepare", default="", metavar="DIR", help="fill DIR with what travels to a GPU host, and stop")
    return ap


def budgets(items: list[str]) -> dict[str, float]:
    """``--timeout parity=60`` -> ``{"parity": 60.0}``; BenchError on a step it does not know."""
    out = {}
    for item in items:
        name, _, seconds = item.partition("=")
        if name not in probe_plan.STEPS or not seconds:
            raise BenchError(f"--timeout {item}: expected STEP=SECONDS, STEP one of {', '.join(probe_plan.STEPS)}")
        out[name] = float(seconds)
    return out


def step_argv(args: argparse.Namespace) -> probe_run.ArgvOf:
    def argv(name: str, result_file: str) -> list[str]:
        extra = ["--quick"] if args.quick else []
        extra += ["--prepared", os.path.abspath(args.prepared)] if args.prepared else []
        return [
            sys.executable, "-m", "bench.lib.gpu.probe_step", name, "--device", args.device,
            "--out", os.path.abspath(args.out), "--result", result_file, *extra,
        ]  # fmt: skip

    return argv


def main() -> int:
    args = parser().parse_args()
    if args.prepare:
        from .probe_prepare import prepare

        return prepare(args.prepare)
    if not args.out:
        raise BenchError("--out DIR is needed (where gpu_probe.json and gpu_probe.md go)")
    device.require_device(args.device)
    names = chosen(args.step, list(probe_plan.STEPS), "--step")
    plan = (probe_plan.QUICK if args.quick else probe_plan.FULL).with_budgets(budgets(args.timeout))
    total = args.total or plan.total_s
    if args.prepared:
        os.environ[ONNX_CACHE_ENV] = os.path.abspath(os.path.join(args.prepared, ONNX_CACHE_DIR))
    os.makedirs(args.out, exist_ok=True)
    # each step's process imports the checkout, whatever the working folder
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    started = time.perf_counter()
    doc: dict[str, Any] = {
        "device": args.device,
        "quick": args.quick,
        "plan": {**plan.as_dict(), "total_s": total},
        "steps": {},
    }
    write_outputs(args.out, doc, started)

    def ended(name: str, record: dict[str, Any]) -> None:
        doc["steps"][name] = record
        write_outputs(args.out, doc, started)
        print(step_line(name, record), flush=True)

    folder = os.path.abspath(os.path.join(args.out, STEPS_DIR))
    probe_run.run_steps(names, plan.budgets_s, total, step_argv(args), folder, ended)
    print(read_markdown(args.out), flush=True)
    failed = [name for name, record in doc["steps"].items() if record["status"] != probe_run.OK]
    print(f"{len(names) - len(failed)}/{len(names)} steps ok; {doc['elapsed_s']:.0f} s; results in {args.out}")
    return 1 if failed else 0


def step_line(name: str, record: Mapping[str, Any]) -> str:
    line = f"step {name}: {record['status']}"
    if "seconds" in record:
        line += f" in {record['seconds']:.1f} s (budget {record['budget_s']:.0f} s)"
    return line + (f": {record['error']}" if record.get("error") else "")


def write_outputs(out: str, doc: dict[str, Any], started: float) -> None:
    """gpu_probe.json (the document, with the machine) and gpu_probe.md, rewritten whole."""
    doc["elapsed_s"] = round(time.perf_counter() - started, 1)
    write_result(RESULT, doc, results_dir=out)
    try:
        page = probe_report.markdown(doc)
    except Exception as exc:  # noqa: BLE001 - the JSON is the record; a page that cannot render says so
        page = f"# GPU probe\n\nThe page could not be rendered ({type(exc).__name__}: {exc}); see {RESULT}.json.\n"
    with open(os.path.join(out, f"{RESULT}.md"), "w", encoding="utf-8") as f:
        f.write(page)


def read_markdown(out: str) -> str:
    with open(os.path.join(out, f"{RESULT}.md"), encoding="utf-8") as f:
        return f.read()
