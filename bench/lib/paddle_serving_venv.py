"""The virtual environment the REAL Paddle Serving 0.9.0 pipeline runs in: the
reference for what a Paddle Serving user's ``web_service.py`` + ``config.yml``
answer (issue 36). Built once under the bench cache (never in the repo) and reused
while it holds its pins; building needs the package registry, using it does not.

Paddle Serving 0.9.0 (the last release) does not install as published on Python
3.11; the steps below are the workarounds of
``shared/paddle-serving-0.9-on-python-3.11.md``, done in code:

1. ``paddle-serving-client`` has only cp36..cp39 wheels: the cp39 one is
   downloaded (``--python-version 39 --platform manylinux1_x86_64``), renamed to a
   ``py3-none-any`` wheel name and installed ``--no-deps`` (its ``serving_client.so``
   is loaded only by the brpc ``Client``; ``local_predictor`` pipelines never load it);
2. ``paddle-serving-server`` / ``-app`` pin grpcio<=1.33.2: installed ``--no-deps``,
   their dependencies by hand with a current grpcio;
3. ``opencv-python==3.4.17.61`` -> ``opencv-python-headless`` of the main environment's
   OpenCV version (the doc's ``<5`` also runs; the same OpenCV as batchline's makes the
   answers comparable: OpenCV 5 crops and resizes a few pixel levels differently);
4. ``sentencepiece<=0.1.96`` -> a current sentencepiece (only imported);
5. ``protobuf==3.20.3`` (its ``*_pb2.py`` predate protobuf 4);
6. the server's own pins (flask<2, click 7.1.2, itsdangerous 1.1.0, Jinja2 2.11.3,
   MarkupSafe 1.1.1, Werkzeug 1.0.1, func-timeout, pyyaml, pytest);
7. ``paddle_serving_client/httpclient.py``: ``from collections import Iterable`` ->
   ``from collections.abc import Iterable``, patched in the venv's site-packages.

paddlepaddle (CPU) is the version installed in the main environment.

``python -m bench.lib.paddle_serving_venv`` builds it (once) and prints its python.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil
import subprocess
import sys

from bench.lib import venvs
from bench.lib.paths import cache_dir
from bench.lib.script import BenchError

SERVING_VERSION = "0.9.0"
PROTOBUF = "3.20.3"
LOG = "venv-paddle-serving.log"  # in the bench cache's logs/


def paddle_version() -> str:
    """The main environment's paddlepaddle (the reference runs the same Paddle Inference)."""
    try:
        return importlib.metadata.version("paddlepaddle")
    except importlib.metadata.PackageNotFoundError:
        return "3.3.1"


def opencv_version() -> str:
    """The main environment's OpenCV (``cv2.__version__`` is the wheel's version without its build)."""
    for name in ("opencv-python-headless", "opencv-python", "opencv-contrib-python"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "4.14.0.88"


def spec() -> venvs.VenvSpec:
    pinned = (
        ("paddle-serving-server", SERVING_VERSION),
        ("paddle-serving-app", SERVING_VERSION),
        ("paddle-serving-client", SERVING_VERSION),
        ("paddlepaddle", paddle_version()),
        ("protobuf", PROTOBUF),
        ("opencv-python-headless", opencv_version()),
    )
    return venvs.VenvSpec(name="paddle-serving", pinned=pinned, install=())


# step 2..6: what the three --no-deps packages need, installed with their dependencies
DEPENDENCIES = (
    f"protobuf=={PROTOBUF}",
    "grpcio",
    "six>=1.10.0",
    "requests",
    "numpy",
    "pillow",
    "pyclipper",
    "shapely",
    "sentencepiece",
    f"opencv-python-headless=={opencv_version()}",
    "flask>=1.1.1,<2.0.0",
    "click==7.1.2",
    "itsdangerous==1.1.0",
    "Jinja2==2.11.3",
    "MarkupSafe==1.1.1",
    "Werkzeug==1.0.1",
    "func-timeout",
    "pyyaml",
    "pytest",
)

PATCH_FILE = "paddle_serving_client/httpclient.py"
PATCH_OLD = "from collections import Iterable"
PATCH_NEW = "from collections.abc import Iterable"


def site_packages(folder: str) -> str:
    found = glob.glob(os.path.join(folder, "lib", "python3*", "site-packages"))
    if not found:
        raise BenchError(f"no site-packages under {folder}")
    return found[0]


def patch_httpclient(folder: str) -> bool:
    """Step 7 on the venv's file; True when the file is (now) patched."""
    path = os.path.join(site_packages(folder), PATCH_FILE)
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if PATCH_OLD + "\n" in text:
        text = text.replace(PATCH_OLD + "\n", PATCH_NEW + "\n", 1)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return PATCH_NEW in text


def _pip(python: str, *args: str) -> list[str]:
    return [python, "-m", "pip", "--disable-pip-version-check", "-q", *args]


def client_wheel(python: str) -> str:
    """Step 1: the cp39 client wheel, downloaded once and renamed to py3-none-any."""
    wheels = cache_dir("paddle-serving-wheels")
    renamed = os.path.join(wheels, f"paddle_serving_client-{SERVING_VERSION}-py3-none-any.whl")
    if os.path.exists(renamed):
        return renamed
    download = [
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "39",
        "--platform",
        "manylinux1_x86_64",
        f"paddle-serving-client=={SERVING_VERSION}",
        "-d",
        wheels,
    ]
    venvs.run_logged(_pip(python, *download), wheels, LOG)
    found = glob.glob(os.path.join(wheels, f"paddle_serving_client-{SERVING_VERSION}-cp39*.whl"))
    if not found:
        raise BenchError(f"pip download left no cp39 paddle_serving_client wheel in {wheels}")
    shutil.copyfile(found[0], renamed + ".part")
    os.replace(renamed + ".part", renamed)
    return renamed


def ensure_venv(*, install: bool = True) -> tuple[str, dict[str, str | None]]:
    """(python of the reference environment, its pinned packages' versions); builds it
    when needed and ``install`` allows. Idempotent: a built one is only checked."""
    s = spec()
    names = [name for name, _ in s.pinned]
    if os.path.exists(s.python):
        versions = venvs.installed_versions(s.python, names)
        if not s.missing(versions) and patch_httpclient(s.folder):
            return s.python, versions
    if not install:
        raise BenchError(f"{s.folder} is not built (run python -m bench.lib.paddle_serving_venv once)")
    if not os.path.exists(s.python):
        print(f"creating the Paddle Serving {SERVING_VERSION} environment {s.folder} (once)", flush=True)
        venvs.run_logged([sys.executable, "-m", "venv", s.folder], s.folder, LOG)
    python = s.python
    print(f"installing into {s.folder} (paddlepaddle {paddle_version()}, Paddle Serving {SERVING_VERSION})", flush=True)
    venvs.run_logged(_pip(python, "install", f"paddlepaddle=={paddle_version()}", *DEPENDENCIES), s.folder, LOG)
    server = (f"paddle-serving-server=={SERVING_VERSION}", f"paddle-serving-app=={SERVING_VERSION}")
    venvs.run_logged(_pip(python, "install", "--no-deps", *server), s.folder, LOG)
    venvs.run_logged(_pip(python, "install", "--no-deps", client_wheel(python)), s.folder, LOG)
    if not patch_httpclient(s.folder):
        raise BenchError(f"could not patch {PATCH_FILE} in {s.folder}")
    versions = venvs.installed_versions(python, names)
    left = s.missing(versions)
    if left:
        raise BenchError(f"{s.folder} still lacks {left} after installing")
    check = "from paddle_serving_server.web_service import WebService, Op\nimport paddle_serving_app.reader\n"
    out = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise BenchError(f"the built environment cannot import Paddle Serving: {out.stderr[-1500:]}")
    return python, versions


def main() -> int:
    python, versions = ensure_venv()
    for name, version in versions.items():
        print(f"# {name} {version}", file=sys.stderr)
    print(python)
    return 0


if __name__ == "__main__":
    from bench.lib.script import run_main

    run_main(main)
