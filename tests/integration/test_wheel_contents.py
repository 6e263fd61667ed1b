"""What the wheel holds: the server's packages and their data, and no training code.

The files are those setuptools' ``build_py`` collects, the step of ``bdist_wheel`` that picks
the package files (a wheel built with ``pip wheel`` here held the same 165 files, less its
dist-info); it needs only setuptools, not the ``wheel`` package or the network. It runs on a
copy of the tree without ``build/``, ``dist/`` or ``*.egg-info``, whose stale manifests could
otherwise add or hide files.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: setup.cfg [options.packages.find]: the folders that go into the wheel, whole
INSTALLED = ("serving", "ops", "pipelines", "client", "tuning", "configs")
#: how the ERNIE demo model is made (recipes/ernie_fields): the server needs only its output
TRAINING = {"build.py", "data.py", "field_keys.py", "network.py", "ocr_noise.py", "onnx_export.py", "ocr_lines.tsv"}


def _skipped(folder: str, names: list[str]) -> set[str]:
    """What a checkout may hold that no build starts from: caches, earlier builds' output."""
    skip = {n for n in names if n.startswith(".") or n == "__pycache__" or n.endswith(".egg-info")}
    if Path(folder).resolve() == ROOT:
        skip |= {"build", "dist"} & set(names)
    return skip


def _files(top: Path) -> set[str]:
    """The files under ``top``, as relative paths, less caches and hidden files."""
    found = (p.relative_to(top) for p in top.rglob("*") if p.is_file())
    return {p.as_posix() for p in found if not any(part.startswith(".") or part == "__pycache__" for part in p.parts)}


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("building the wheel needs setuptools (pyproject.toml [build-system])")
    tmp = tmp_path_factory.mktemp("wheel")
    src, lib = tmp / "src", tmp / "lib"
    shutil.copytree(ROOT, src, ignore=_skipped)
    subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib", str(lib)],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return _files(lib)


def _source_files(*globs: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for g in globs for p in ROOT.glob(g) if p.is_file()}


def test_wheel_holds_the_server_packages_and_their_data(wheel_files):
    assert _source_files("configs/*.yml", "configs/repository/*.yml") <= wheel_files
    assert _source_files("serving/http/page_files/*") <= wheel_files
    model = _source_files("pipelines/*/model/*")
    assert "pipelines/ernie_fields/model/inference.onnx" in model
    assert model <= wheel_files
    assert "pipelines/ernie_fields/README.md" in wheel_files  # the model card
    # every file of the installed folders and nothing else: a data file left out of package_data fails here
    expected = {f"{top}/{name}" for top in INSTALLED for name in _files(ROOT / top)}
    assert (sorted(expected - wheel_files), sorted(wheel_files - expected)) == ([], []), "(left out, added)"


def test_wheel_holds_no_training_code_tests_or_benchmarks(wheel_files):
    assert {f.split("/")[0] for f in wheel_files} == set(INSTALLED)
    assert not [f for f in wheel_files if f.startswith("pipelines/") and f.rsplit("/", 1)[-1] in TRAINING]
    assert not [f for f in wheel_files if f.endswith(".tsv")]
