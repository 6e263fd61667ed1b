"""Where the benchmarks read configs and write results and caches."""

from __future__ import annotations

import os
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
CONFIG_DIR = os.environ.get("BENCH_CONFIG_DIR") or os.path.join(ROOT, "configs")


def cache_dir(*parts: str) -> str:
    """A directory under $BENCH_CACHE (default: <tmp>/batchline-bench-cache); never in the repo."""
    base = os.environ.get("BENCH_CACHE") or os.path.join(tempfile.gettempdir(), "batchline-bench-cache")
    path = os.path.join(base, *parts)
    os.makedirs(path, exist_ok=True)
    return path
