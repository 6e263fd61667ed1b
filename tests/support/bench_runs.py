"""A bench script run as its users run it: ``python -m MODULE ARGS`` from the checkout, in a
fresh interpreter, warnings quiet, output captured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.loaded_ops import ROOT


def run_bench(
    module: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def quick_cpu_run(module: str, out: Path, result: str) -> tuple[dict[str, Any], str]:
    """``python -m MODULE --device cpu --quick --out OUT`` (a GPU tool's own test): its
    ``OUT/<result>.json`` and its output, asserting it exited 0."""
    proc = run_bench(module, "--device", "cpu", "--quick", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out / f"{result}.json", encoding="utf-8") as f:
        return json.load(f), proc.stdout
