"""The environment a GPU check reports (GPU, driver, torch, CUDA, the checkout's
commit) and the refusal when ``--device cuda`` finds no GPU."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from bench.lib.paths import ROOT
from bench.lib.results import machine_info
from bench.lib.script import BenchError

#: what --prepare writes beside the wheels: the commit travels there, as a copied tree has no .git
PREPARED_FILE = "prepared.json"


def cuda_refusal() -> str | None:
    """Why ``--device cuda`` cannot run here (one line), or None when torch sees a GPU."""
    try:
        import torch
    except ImportError:
        return "--device cuda: torch is not installed, so no GPU can be used; use --device cpu for the CPU run"
    if torch.cuda.is_available():
        return None
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a build without CUDA"
    return f"--device cuda: torch {torch.__version__} ({build}) sees no CUDA GPU; use --device cpu for the CPU run"


def require_device(device: str) -> None:
    """BenchError (the script exits 2: a refusal, nothing measured) when ``device`` is not usable."""
    if device == "cuda":
        why = cuda_refusal()
        if why is not None:
            raise BenchError(why)


def environment(device: str, prepared: str | None = None) -> dict[str, Any]:
    """The machine, torch and its CUDA, the GPU and its driver, the commit measured."""
    env: dict[str, Any] = {"device": device, **machine_info(), "commit": commit(prepared)}
    env.update(torch_versions())
    if device == "cuda":
        env.update(gpu_info())
    return env


def torch_versions() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {"torch": None, "cuda": None}
    return {"torch": torch.__version__, "cuda": torch.version.cuda}


def gpu_info(index: int = 0) -> dict[str, Any]:
    """GPU ``index``'s name and memory (torch), and the driver (nvidia-smi, when on the PATH)."""
    import torch

    props = torch.cuda.get_device_properties(index)
    info: dict[str, Any] = {
        "gpu": props.name,
        "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        "gpu_capability": f"{props.major}.{props.minor}",
        "driver": None,
    }
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={index}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        info["driver"] = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def commit(prepared: str | None = None) -> str:
    """The checkout's commit (``+dirty`` when it has changes), else the one ``--prepare``
    recorded in ``prepared`` (a copied tree without .git), else ``"unknown"``."""
    try:
        head = _git("rev-parse", "--short=12", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    if prepared:
        try:
            with open(os.path.join(prepared, PREPARED_FILE), encoding="utf-8") as f:
                return str(json.load(f)["commit"])
        except (OSError, ValueError, KeyError):
            pass
    return "unknown"


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()


def summary_line(env: dict[str, Any]) -> str:
    """One line of the environment, printed first."""
    where = f"GPU {env['gpu']} ({env['gpu_memory_gib']} GiB), driver {env['driver']}" if env.get("gpu") else "CPU"
    return (
        f"{where}; torch {env['torch']}, CUDA {env['cuda']}; {env['nproc']} cores ({env['cpu']}); "
        f"Python {env['python']}; batchline {env['commit']}"
    )
