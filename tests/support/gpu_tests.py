"""What the GPU test files share: reading the rec crops through an engine's keys, and
running a GPU test file where no GPU is, to check it skips (with its reason) rather
than passes."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.loaded_ops import ROOT, loaded_ops


def read_crops(keys: dict) -> list[str]:
    """The rec op's text for each of the committed rec crops, on the engine ``keys`` describe."""
    from serving.batching.direct import run_op_direct
    from tests.support import ocr_data

    ((op, runner),) = loaded_ops("rec.yml", {"rec": keys}).values()
    try:
        return [run_op_direct(op, runner, {"input": c.image})["text"] for c in ocr_data.rec_crops()]
    finally:
        runner.close()


def run_gpu_test_file(name: str) -> subprocess.CompletedProcess:
    """``pytest -rs`` of tests/e2e/``name`` in a fresh interpreter (every tier, no cache)."""
    path = os.path.join(ROOT, "tests", "e2e", name)
    return subprocess.run(
        [sys.executable, "-m", "pytest", path, "-q", "-rs", "-m", "", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
