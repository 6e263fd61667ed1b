"""A bench script run as its users run it: ``python -m MODULE ARGS`` from the checkout, in a
fresh interpreter, warnings quiet, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

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
