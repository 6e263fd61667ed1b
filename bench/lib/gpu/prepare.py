"""``python -m bench.gpu_check --prepare DIR``, on a CPU machine with Paddle: the folder that
travels with the checkout to a GPU host, which has PyTorch but no Paddle and no network.

* ``DIR/onnx-cache``: each model of configs/ocr_gpu.yml converted to ONNX (paddle2onnx needs
  Paddle, so the host cannot convert); the check points ``BATCHLINE_ONNX_CACHE`` at it;
* ``DIR/wheels``: :data:`~bench.lib.gpu.host.TRAVELLING`, the versions installed here, for
  CPython 3.12 on manylinux x86_64 (``pip download --no-deps --only-binary=:all:``);
* ``DIR/prepared.json``: the commit prepared, the wheels and the sizes.

Then the folder's size (refused over :data:`LIMIT_MIB`: the device tool carries at most
64 MiB with the checkout) and the host check (:mod:`bench.lib.gpu.host`): exit 1 when the
GPU check would import something the host lacks.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from bench.lib.paths import ROOT
from bench.lib.script import BenchError

from . import configs, device, host
from .cli import ONNX_CACHE_DIR, ONNX_CACHE_ENV

LIMIT_MIB = 60
WHEELS_DIR = "wheels"
PYTHON_VERSION = "3.12"
# pip matches each manylinux tag exactly: the ones the travelling wheels are built for
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")


def prepare(folder: str, extra_models: Sequence[str] = (), limit_mib: float = LIMIT_MIB) -> int:
    """Fill ``folder`` (with ``extra_models``' conversions too: model folders beyond the
    config's); 0 when it fits in ``limit_mib`` and the host check finds nothing missing."""
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    cache = os.path.join(folder, ONNX_CACHE_DIR)
    converted = fill_onnx_cache(cache, extra_models)
    wheels = download_wheels(os.path.join(folder, WHEELS_DIR))
    sizes = {"wheels": mib(os.path.join(folder, WHEELS_DIR)), "onnx-cache": mib(cache)}
    record: dict[str, Any] = {
        "commit": device.commit(),
        "python": PYTHON_VERSION,
        "platforms": list(PLATFORMS),
        "pip_download": " ".join(pip_download_argv("WHEELS")),
        "wheels": wheels,
        "onnx": converted,
        "size_mib": sizes,
    }
    with open(os.path.join(folder, device.PREPARED_FILE), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    total = mib(folder)
    print(f"{folder}: {total:.1f} MiB (wheels {sizes['wheels']:.1f}, ONNX {sizes['onnx-cache']:.1f})", flush=True)
    if total > limit_mib:
        raise BenchError(f"{folder} holds {total:.1f} MiB, over the {limit_mib:g} MiB that may travel")
    return report_host_check(host_check(cache))


def fill_onnx_cache(cache: str, extra_models: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Convert the model of each torch op of the shipped config, and ``extra_models``, into
    ``cache`` (kept if already there), as ``python -m serving.runners.onnx_export configs/ocr_gpu.yml``
    does; a model folder with its own inference.onnx needs nothing there (it travels as the checkout)."""
    from bench.lib.configs import repo_config_path
    from serving.runners.onnx_export import onnx_file, torch_model_dirs

    out = []
    wanted = torch_model_dirs([repo_config_path(configs.CONFIG)])
    for model_dir in wanted + [m for m in extra_models if m not in wanted]:
        path = onnx_file(model_dir, environ={ONNX_CACHE_ENV: cache})
        out.append({"model": os.path.basename(model_dir), "onnx": os.path.basename(path)})
        print(f"ONNX of {os.path.basename(model_dir)}: {path}", flush=True)
    if not out:
        raise BenchError(f"no op of configs/{configs.CONFIG}.yml runs on engine: torch: nothing to convert")
    return out


def pins() -> list[str]:
    """``name==version`` of each travelling distribution, as installed here (what was tested)."""
    try:
        return [f"{name}=={importlib.metadata.version(name)}" for name in host.TRAVELLING]
    except importlib.metadata.PackageNotFoundError as exc:
        raise BenchError(f"{exc.name} travels to the GPU host but is not installed here") from None


def pip_download_argv(dest: str) -> list[str]:
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    return [
        "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", PYTHON_VERSION,
        "--implementation", "cp", *platforms, "-d", dest, *pins(),
    ]  # fmt: skip


def download_wheels(dest: str) -> list[dict[str, Any]]:
    """A fresh ``dest`` with one wheel of each travelling distribution (two versions of one
    would stop the host's install)."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    argv = pip_download_argv(dest)
    proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"pip download failed: {proc.stderr.strip().splitlines()[-1:]}")
    return [
        {"file": os.path.basename(p), "mib": round(os.path.getsize(p) / 2**20, 2)}
        for p in sorted(glob.glob(os.path.join(dest, "*.whl")))
    ]


def mib(path: str) -> float:
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
    return round(total / 2**20, 1)


def host_check(cache: str) -> dict[str, Any]:
    """:mod:`bench.lib.gpu.host` in a fresh process, on the CPU variant of the config."""
    config = configs.write_repository(configs.check_config("cpu"), "host")
    env = dict(os.environ, **{ONNX_CACHE_ENV: cache}, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.lib.gpu.host", configs.ocr_file(config)],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise BenchError(f"the host check failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(lines[-1])


def report_host_check(found: dict[str, Any]) -> int:
    """Print what the host would lack; 1 when anything."""
    if not found["failures"]:
        print("host check: the GPU check imports and loads with only the host's packages and the wheels")
        return 0
    print("host check: on the GPU host the check would fail:")
    for line in found["failures"]:
        print(f"  {line}")
    for refused in found["refused"]:
        print(f"  missing there: {refused['module']} ({refused['distribution']}), imported by {refused['imported_by']}")
    return 1
