"""The GPU check's CPU reference: issue 37 asks served OCR on a GPU for at least 10x "the
same server on a 2-core CPU", and a ratio is only worth what was measured beside it, so the
reference is served on the GPU host itself, in the same run as the GPU servers:

* the server: ``configs/ocr.yml``, the shipped CPU config (tuned for two cores, PaddleOCR's
  lines), served under the GPU pipeline's name so that the same requests reach it;
* the cores: two of the host's, pinned as ``taskset`` would pin them (the server and its
  predictors; the load's clients stay outside them), not hyperthread siblings where the
  host has two physical cores to give;
* the engine: the best CPU engine the host has, OpenVINO Runtime (configs/ocr.yml's) where
  it is installed, else ONNX Runtime: a GPU host has no OpenVINO, and its wheel is larger
  than what travels there. ``python -m bench.cpu_engines`` measures what ONNX Runtime serves
  against OpenVINO on the same two cores (docs/BENCHMARKS.md, "GPU").
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bench.lib.configs import load_repo_config
from bench.lib.script import BenchError

from .configs import capped, with_engine

CONFIG = "ocr"
CORES = 2
#: the reference's key among the check's servers (beside configs.BATCHING's)
KEY = "cpu"
#: the CPU engines a reference may run on, best first (docs/BENCHMARKS.md, "engine: torch
#: and engine: onnxruntime on the CPU")
ENGINES = ("openvino", "onnxruntime")
CHOICES = ("auto", "none", *ENGINES)
SIBLINGS_FILE = "/sys/devices/system/cpu/cpu{}/topology/thread_siblings_list"


def reference_engine(choice: str, installed: Callable[[str], bool] | None = None) -> str | None:
    """The engine ``--cpu-reference`` names: ``auto``, the first of :data:`ENGINES` installed;
    ``none``, no reference (None). BenchError when the engine it needs is not installed."""
    has = installed or (lambda module: importlib.util.find_spec(module) is not None)
    if choice == "none":
        return None
    if choice not in CHOICES:
        raise BenchError(f"--cpu-reference {choice}: one of {', '.join(CHOICES)}")
    picked = next((e for e in ENGINES if has(e)), None) if choice == "auto" else choice
    if picked is None or not has(picked):
        raise BenchError(
            f"--cpu-reference {choice}: {picked or ' or '.join(ENGINES)} is not installed here "
            "(--cpu-reference none measures the GPU servers alone)"
        )
    return picked


def reference_config(engine: str, name: str, max_batch_size: int | None = None) -> dict[str, Any]:
    """configs/ocr.yml on ``engine`` (without the keys another engine owns), served as
    pipeline ``name``, each op's max_batch_size at most ``max_batch_size`` when given."""
    data = with_engine(load_repo_config(CONFIG), engine)
    data["name"] = name
    return capped(data, max_batch_size) if max_batch_size is not None else data


def parse_cpu_list(text: str) -> list[int]:
    """A kernel CPU list (``0,8`` or ``0-1,4``) as CPU numbers."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.extend(range(int(low), int(high) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


def siblings(cpu: int) -> set[int]:
    """The CPUs sharing ``cpu``'s physical core (itself only where the kernel does not say)."""
    try:
        with open(SIBLINGS_FILE.format(cpu), encoding="ascii") as f:
            return set(parse_cpu_list(f.read())) | {cpu}
    except (OSError, ValueError):
        return {cpu}


def distinct_cores(
    available: Iterable[int] | None = None, count: int = CORES, siblings_of: Callable[[int], set[int]] = siblings
) -> list[int]:
    """``count`` CPUs of ``available`` (default: this process's), each on a physical core of
    its own while there are enough cores, then any; fewer only where fewer are available."""
    cpus = sorted(os.sched_getaffinity(0) if available is None else available)
    chosen: list[int] = []
    taken: set[int] = set()
    for cpu in cpus:
        if len(chosen) < count and cpu not in taken:
            chosen.append(cpu)
            taken |= siblings_of(cpu)
    chosen += [cpu for cpu in cpus if cpu not in chosen][: count - len(chosen)]
    return sorted(chosen)


def describe(engine: str, cpus: Sequence[int], siblings_of: Callable[[int], set[int]] = siblings) -> dict[str, Any]:
    """What the document records of the reference: its config, engine and cores."""
    cores = {frozenset(siblings_of(cpu) & set(cpus)) for cpu in cpus}
    return {"config": f"configs/{CONFIG}.yml", "engine": engine, "cpus": list(cpus), "physical_cores": len(cores)}
