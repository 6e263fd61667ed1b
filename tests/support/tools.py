"""Command-line tools the test extra installs (ruff, lint-imports, hadolint, ...)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def installed_tool(name: str) -> str:
    """The tool's path: beside this Python (its venv) first, else on PATH; fails the test when missing."""
    local = Path(sys.executable).with_name(name)
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found
