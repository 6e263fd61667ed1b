"""Virtual environments of the bench's own, for peers whose packages are not
the project's (mosec, PyTriton, LitServe, Ray Serve, granian): one per peer,
created on first use under the bench cache (never in the repo) and reused
while it holds the pinned versions. Building one needs the package registry;
using a built one does not.

The same scheme as :mod:`bench.lib.rapidocr_venv`, for any set of pins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from bench.lib.paths import cache_dir
from bench.lib.script import BenchError

_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        out[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        out[name] = None\n"
    "print(json.dumps(out))\n"
)


@dataclass(frozen=True)
class VenvSpec:
    """``name``: the folder's stem; ``pinned``: package -> exact version;
    ``install``: pip requirements that bring the pins (e.g. ``ray[serve]==2.60.0``);
    ``system_site``: see the interpreter's packages too (a peer that serves the
    project's own app and only adds a server, e.g. granian)."""

    name: str
    pinned: tuple[tuple[str, str], ...]
    install: tuple[str, ...]
    system_site: bool = False

    @property
    def folder(self) -> str:
        tag = "-".join(version for _, version in self.pinned)
        return os.path.join(cache_dir(), f"venv-peer-{self.name}-{tag}")

    @property
    def python(self) -> str:
        return os.path.join(self.folder, "bin", "python")

    def missing(self, versions: dict[str, str | None]) -> list[str]:
        """The pins ``versions`` (installed package -> version) do not meet."""
        return [f"{name}=={want}" for name, want in self.pinned if versions.get(name) != want]


def installed_versions(python: str, names: list[str]) -> dict[str, str | None]:
    """Versions of ``names`` in the environment of ``python`` (None: not installed)."""
    out = subprocess.run([python, "-c", _VERSIONS, *names], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise BenchError(f"cannot read package versions with {python}: {out.stderr[-500:]}")
    return json.loads(out.stdout)


def is_built(spec: VenvSpec) -> bool:
    """Whether the environment exists with its pins (no network needed to use it)."""
    if not os.path.exists(spec.python):
        return False
    return not spec.missing(installed_versions(spec.python, [name for name, _ in spec.pinned]))


def ensure_venv(spec: VenvSpec, *, install: bool = True) -> tuple[str, dict[str, str | None]]:
    """(python of ``spec``'s environment, its pinned packages' versions); creates the
    environment and installs from the registry when needed and ``install`` allows."""
    names = [name for name, _ in spec.pinned]
    if not os.path.exists(spec.python):
        if not install:
            raise BenchError(f"{spec.folder} is not built (run without --no-install once)")
        print(f"creating the {spec.name} environment {spec.folder} (once)", flush=True)
        cmd = [sys.executable, "-m", "venv", spec.folder]
        run_logged([*cmd, "--system-site-packages"] if spec.system_site else cmd, spec.folder, f"venv-{spec.name}.log")
    if spec.missing(installed_versions(spec.python, names)):
        if not install:
            raise BenchError(f"{spec.folder} lacks its pins {spec.pinned} (run without --no-install once)")
        print(f"installing into {spec.folder}: {' '.join(spec.install)}", flush=True)
        pip = [spec.python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *spec.install]
        run_logged(pip, spec.folder, f"venv-{spec.name}.log")
        left = spec.missing(installed_versions(spec.python, names))
        if left:
            raise BenchError(f"{spec.folder} still lacks {left} after pip install")
    return spec.python, installed_versions(spec.python, names)


def run_logged(cmd: list[str], folder: str, log_name: str) -> None:
    """Run one step of building the environment in ``folder`` (venv, pip), its output
    appended to the bench cache's ``logs/<log_name>``; BenchError with the log's tail if it fails."""
    log = os.path.join(cache_dir("logs"), log_name)
    with open(log, "ab") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=1800).returncode
    if rc != 0:
        with open(log, "rb") as f:
            tail = f.read()[-1500:].decode("utf-8", "replace")
        raise BenchError(f"{' '.join(cmd[:4])} ... failed ({rc}) for {folder}; log {log}:\n{tail}")
