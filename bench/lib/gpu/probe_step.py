"""One step of the GPU probe in a process of its own::

    python -m bench.lib.gpu.probe_step NAME --device cuda|cpu [--quick] --out DIR --result FILE

The step's module (:data:`STEP_MODULES`) has ``run(ctx)``; what it measures goes into
``ctx.record``, written to FILE (atomically) each time it calls :meth:`StepContext.put`, so
a step stopped past its budget still leaves what it measured. A failure is written as the
record's ``error`` (exit 1); SIGTERM, the runner's stop, unwinds the step (its servers are
stopped by their ``finally``) and exits 124.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import FrameType, MappingProxyType
from typing import Any

from .probe_plan import FULL, QUICK, STEPS, ProbePlan

STEP_MODULES: Mapping[str, str] = MappingProxyType({name: f"bench.lib.gpu.probe_{name}" for name in STEPS})
STOPPED_EXIT = 124


class Stopped(BaseException):
    """SIGTERM: the step ran past its budget (a BaseException: no step's ``except Exception`` keeps it)."""


@dataclass
class StepContext:
    """What a step runs with, and its record, written as it grows."""

    device: str
    plan: ProbePlan
    out: str
    result_file: str
    prepared: str | None = None
    record: dict[str, Any] = field(default_factory=dict)

    def put(self, key: str, value: Any) -> None:
        self.record[key] = value
        self.save()

    def save(self) -> None:
        write_json(self.result_file, self.record)


def write_json(path: str, doc: Any) -> None:
    """``doc`` into ``path`` atomically: a reader never sees half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False, default=str)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench.lib.gpu.probe_step")
    ap.add_argument("step", choices=STEPS)
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--prepared", default="")
    return ap


def stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped()


def error_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


def failure(exc: BaseException) -> dict[str, str]:
    """The entry of one measurement that failed (a model, a shape): the step goes on to the
    next one, since a GPU is lent once and the rest may still be measured."""
    return {"error": error_line(exc)}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ctx = StepContext(args.device, QUICK if args.quick else FULL, args.out, args.result, args.prepared or None)
    signal.signal(signal.SIGTERM, stop)
    try:
        importlib.import_module(STEP_MODULES[args.step]).run(ctx)
    except Stopped:
        ctx.put("error", "stopped: past its time budget")
        return STOPPED_EXIT
    except Exception as exc:  # noqa: BLE001 - the failure is the step's record; the next step still runs
        traceback.print_exc()
        ctx.put("error", error_line(exc))
        return 1
    ctx.save()
    return 0


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
