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

if __name__ == "__main__" and not __package__:
    from _as_module import rerun_as_module  # bench/ is on the path of a script run as a file

    rerun_as_module(__file__)

from bench.lib.gpu.cli import main  # noqa: E402  (after the re-run above, which needs no bench import)
from bench.lib.script import run_main  # noqa: E402

if __name__ == "__main__":
    run_main(main)
