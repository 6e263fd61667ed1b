"""Debian's Chromium for the browser tests.

Playwright's own browser download cannot run here (only package registries
are reachable), so the tests drive the system Chromium. A fresh CI machine
has none: :func:`find_or_install` then installs Debian's package with
apt-get, but only as root with apt-get present; elsewhere it says why it
cannot, and the caller skips with that reason.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable

log = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
INSTALL_TIMEOUT_S = 1800.0  # apt-get update + Chromium and its libraries on a slow mirror

# No network but the package registries: nothing in the background may phone home.
_QUIET = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)


def launch_args() -> list[str]:
    """Chromium's command-line flags here (as root its sandbox refuses to start)."""
    return [*_QUIET, *(("--no-sandbox",) if os.geteuid() == 0 else ())]


class ChromiumUnavailable(Exception):
    """Chromium is missing and cannot be installed here; the message says why."""


def _run(argv: list[str], timeout: float, env: dict[str, str]) -> None:
    log.warning("installing Chromium for the browser tests: %s", " ".join(argv))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    if out.returncode != 0:
        tail = f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        raise RuntimeError(f"{' '.join(argv)} exited with {out.returncode}:\n{tail}")


def find_or_install(
    path: str = CHROMIUM,
    *,
    run: Callable[[list[str], float, dict[str, str]], None] = _run,
    is_root: Callable[[], bool] = lambda: os.geteuid() == 0,
    which: Callable[[str], str | None] = shutil.which,
) -> str:
    """``path`` once Chromium is there, installing Debian's package when it is not.

    Raises :class:`ChromiumUnavailable` when it is missing and this is no root
    with apt-get, and RuntimeError when apt-get fails (a broken install is a
    failure to see, not a reason to skip)."""
    if os.path.exists(path):
        return path
    if which("apt-get") is None:
        raise ChromiumUnavailable(f"{path} is missing and there is no apt-get to install Debian's chromium")
    if not is_root():
        raise ChromiumUnavailable(f"{path} is missing; installing it needs root: apt-get install chromium")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update"], INSTALL_TIMEOUT_S / 3, env)
    run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], INSTALL_TIMEOUT_S, env)
    if not os.path.exists(path):
        raise RuntimeError(f"apt-get installed chromium, but {path} is still missing")
    log.warning("installed Chromium at %s", path)
    return path
