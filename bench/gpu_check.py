"""configs/ocr_gpu.yml on one GPU, in one command of at most 8 minutes: the environment,
the served lines of the committed sample pages against PaddleOCR 2.10's answers, det's
and rec's batch curves on the device, and the served OCR and rec throughput and p99 at
1, 8, 32 and 64 clients with batching on and off side by side; JSON and markdown in --out.

    python -m bench.gpu_check --out DIR                       # on the GPU host (refused without a GPU)
    python -m bench.gpu_check --device cpu --quick --out DIR  # the same steps on a CPU, ~1 min
    python -m bench.gpu_check --prepare DIR                   # on a CPU machine: what travels to the host

docs/DEPLOY.md ("GPU") gives the host's command line; bench/lib/gpu/ holds the steps.
"""

from __future__ import annotations

import os
import sys


def rerun_as_module() -> None:
    """Given to python as a file, this script sees bench/ on its path, not the checkout, and
    the bench's imports (``bench.lib``) would not resolve: run it again as a module, with the
    checkout on PYTHONPATH (the working folder stays: --out may be relative to it)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    os.execve(sys.executable, [sys.executable, "-m", "bench.gpu_check", *sys.argv[1:]], env)


if __name__ == "__main__" and not __package__:
    rerun_as_module()

from bench.lib.gpu.cli import main  # noqa: E402  (after the re-run above, which needs no bench import)
from bench.lib.script import run_main  # noqa: E402

if __name__ == "__main__":
    run_main(main)
