"""The OCR ops load and read a page with no Paddle and no PaddleOCR importable, as
on a GPU host that carries only PyTorch (``engine: torch``), only ONNX Runtime
(``engine: onnxruntime``) or only OpenVINO (on PyTorch and ONNX Runtime, OpenVINO is
refused too, as the GPU image has none: deploy/requirements-gpu.txt): a
fresh interpreter whose import system refuses ``paddle``, ``paddleocr`` (and the
``ppocr`` / ``paddle2onnx`` packages that would pull Paddle in) loads configs/ocr.yml's
det and rec ops on the engine, runs one page through them and reads the lines that
the same chain reads with Paddle importable.

``engine: torch`` and ``engine: onnxruntime`` run the models' ONNX form, converted from the Paddle files by
paddle2onnx (which needs Paddle): a first run with Paddle importable fills a
temporary ``BATCHLINE_ONNX_CACHE``, which the run without Paddle then reads
(serving/runners/onnx_export.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.support.loaded_ops import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("paddle", "openvino", "rapidocr_paddle")),
        reason="needs paddle (to convert and compare), openvino and rapidocr_paddle",
    ),
]

BLOCKED = ("paddle", "paddleocr", "ppocr", "paddle2onnx")

# argv: engine, "block" or "allow", the blocked names (comma-separated);
# prints the page's lines (and what of BLOCKED got imported) as JSON on its last line
CHILD = r"""
import importlib.abc
import json
import sys

engine, mode, BLOCKED = sys.argv[1], sys.argv[2], tuple(sys.argv[3].split(","))


class RefusePaddle(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked for this test: {fullname}")
        return None


if mode == "block":
    sys.meta_path.insert(0, RefusePaddle())

from serving.batching.direct import run_chain_direct
from tests.support.loaded_ops import loaded_ops
from tests.support.synth import random_document

keys = {"engine": engine, "use_openvino": False, "precision": "fp32", "instance_mode": "thread", "instance_num": 1}
if engine in ("torch", "onnxruntime"):
    keys["conv_kernels"] = "auto"
chain = list(loaded_ops("ocr.yml", {"det": keys, "rec": keys}).values())
lines = run_chain_direct(chain, random_document(5, n_lines=4).image)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
print(json.dumps({"lines": lines, "loaded": loaded}))
"""


def blocked_for(engine: str) -> tuple[str, ...]:
    return BLOCKED + (("openvino",) if engine in ("torch", "onnxruntime") else ())


def read_page(engine: str, mode: str, cache: str) -> dict:
    env = {**os.environ, "BATCHLINE_ONNX_CACHE": cache}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, engine, mode, ",".join(blocked_for(engine))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


ONNX_ENGINES = {"torch": ("torch", "onnx", "paddle2onnx"), "onnxruntime": ("onnxruntime", "onnx", "paddle2onnx")}


@pytest.mark.parametrize("engine", ["openvino", *ONNX_ENGINES])
def test_ocr_ops_run_without_paddle(engine, tmp_path):
    needs = ONNX_ENGINES.get(engine, ())
    if not all(importlib.util.find_spec(m) for m in needs):
        pytest.skip(f"engine: {engine} needs {', '.join(needs)} (to fill the cache)")
    cache = str(tmp_path / "onnx")
    with_paddle = read_page(engine, "allow", cache)  # for the ONNX engines: converts into the cache
    without = read_page(engine, "block", cache)
    assert without["loaded"] == []
    assert [line["text"] for line in without["lines"]], "read no line"
    assert without["lines"] == with_paddle["lines"]
