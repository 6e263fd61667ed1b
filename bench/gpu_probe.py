"""The GPU probe, in one command of at most 6 minutes on one GPU (issue 37): versions; fp32
on the GPU against the CPU for det, rec, cls and ERNIE; fp16 and bf16 against fp32 (and
rec's text); a torch.profiler trace of one det and one rec call; event-timed curves (det
1-8, rec 1-128 at widths 320 and 960, fp32 and fp16, graphs off and on); served OCR and rec
at 1 and 32 clients, batching on and off. Each step runs in its own process within its own
budget, and gpu_probe.json and gpu_probe.md in --out are rewritten as each step ends: a
step that fails or runs out of time is recorded, and the next one runs.

    python -m bench.gpu_probe --prepared DIR --out OUT        # on the GPU host (refused without a GPU)
    python -m bench.gpu_probe --device cpu --quick --out OUT  # the same steps on a CPU, ~2 min
    python -m bench.gpu_probe --prepare DIR                   # on a CPU machine: what travels to the host

docs/DEPLOY.md ("GPU") gives the host's command line; bench/lib/gpu/probe_*.py hold the steps.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:
    from _as_module import rerun_as_module  # bench/ is on the path of a script run as a file

    rerun_as_module(__file__)

from bench.lib.gpu.probe_cli import main  # noqa: E402  (after the re-run above, which needs no bench import)
from bench.lib.script import run_main  # noqa: E402

if __name__ == "__main__":
    run_main(main)
