"""A bench script given to python by its path (bench/gpu_check.py) run as the module it is
(``python -m bench.gpu_check``): as a file it sees bench/ on its path, not the checkout,
so its ``bench.lib`` imports would not resolve. The scripts a GPU host may be handed this way
import this module first, as a top-level one (bench/ is on the path then), before any
``bench`` import."""

from __future__ import annotations

import os
import sys


def rerun_as_module(script: str) -> None:
    """Replace this process with ``python -m bench.<script's name>`` and the same arguments,
    the checkout first on PYTHONPATH (the working folder stays: --out may be relative to it)."""
    bench = os.path.dirname(os.path.abspath(script))
    name = os.path.splitext(os.path.basename(script))[0]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(bench), os.environ.get("PYTHONPATH")]))
    )
    os.execve(sys.executable, [sys.executable, "-m", f"bench.{name}", *sys.argv[1:]], env)
