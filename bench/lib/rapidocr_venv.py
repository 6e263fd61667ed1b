"""The virtual environment the RapidOCR peers run in.

rapidocr_openvino 1.4.4 pins ``openvino<=2024.0.0``, while batchline needs a
current OpenVINO: the peers get an environment of their own, created on first
use under the bench cache (never in the repo) and reused while it holds the
pinned versions. It is also what a user who installs RapidOCR gets.
"""

from __future__ import annotations

import os
import sys

from bench.lib import venvs
from bench.lib.paths import cache_dir
from bench.lib.script import BenchError

RAPIDOCR_VERSION = "1.4.4"
PINNED = {"rapidocr_openvino": RAPIDOCR_VERSION, "rapidocr_onnxruntime": RAPIDOCR_VERSION}
EXTRA = ("flask", "waitress")  # the peer server's
LOG = "rapidocr-venv.log"  # in the bench cache's logs/
REPORTED = ("rapidocr_openvino", "rapidocr_onnxruntime", "openvino", "onnxruntime", "numpy", "opencv-python")


def venv_dir() -> str:
    return os.path.join(cache_dir(), f"venv-rapidocr-{RAPIDOCR_VERSION}")


def venv_python(folder: str) -> str:
    return os.path.join(folder, "bin", "python")


def installed_versions(python: str, names: tuple[str, ...] = REPORTED + EXTRA) -> dict[str, str | None]:
    """Versions of ``names`` in the environment of ``python`` (None: not installed)."""
    return venvs.installed_versions(python, list(names))


def needs_install(versions: dict[str, str | None]) -> list[str]:
    """Requirements the environment does not meet yet (pip arguments)."""
    missing = [f"{name}=={want}" for name, want in PINNED.items() if versions.get(name) != want]
    missing += [name for name in EXTRA if not versions.get(name)]
    return missing


def ensure_venv(folder: str | None = None) -> tuple[str, dict[str, str | None]]:
    """(python of the RapidOCR environment, its package versions); creates the
    environment and installs the pinned packages from the registry when needed."""
    folder = folder or venv_dir()
    python = venv_python(folder)
    if not os.path.exists(python):
        print(f"creating the RapidOCR environment {folder} (once)", flush=True)
        venvs.run_logged([sys.executable, "-m", "venv", folder], folder, LOG)
    missing = needs_install(installed_versions(python))
    if missing:
        print(f"installing into {folder}: {' '.join(missing)}", flush=True)
        venvs.run_logged([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *missing], folder, LOG)
        missing = needs_install(installed_versions(python))
        if missing:
            raise BenchError(f"{folder} still lacks {missing} after pip install")
    return python, installed_versions(python)
