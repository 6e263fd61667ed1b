"""The habits CI holds, run by the README's test command: lint and format
(ruff), types on serving/ and ops/ (mypy), and the import layers (import-linter,
contracts in setup.cfg). Each failure prints the tool's own report.

The tools keep their caches (.ruff_cache, .mypy_cache, .import_linter_cache; all
keyed on file contents), so a second run in a checkout takes seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.tools import installed_tool

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> None:
    out = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT))
    )
    assert out.returncode == 0, f"{' '.join(argv)}:\n{out.stdout}\n{out.stderr}"


def test_ruff_lint():
    _run(installed_tool("ruff"), "check", ".")


def test_ruff_format():
    _run(installed_tool("ruff"), "format", "--check", ".")


def test_import_layers():
    _run(installed_tool("lint-imports"))


def test_types_of_serving_and_ops():
    _run(sys.executable, "-m", "mypy")
