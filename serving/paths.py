"""Paths in configs (``pkg://<package>/<path>``, or relative to the file) and a model directory's files."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Mapping

PKG_SCHEME = "pkg://"
# a Paddle model directory: one program file (PIR .json preferred) and its weights
MODEL_GRAPH_FILES = ("inference.json", "inference.pdmodel")
MODEL_PARAMS_FILE = "inference.pdiparams"
# what OpenVINO Runtime reads, preferred first: an IR is exported or quantised on purpose
OPENVINO_MODEL_FILES = ("inference.xml", "inference.onnx", "inference.pdmodel")
# ``engine: torch``: an ONNX file, else the legacy program (paddle2onnx 1.3 reads no PIR .json)
TORCH_ONNX_FILE = "inference.onnx"


def user_cache_dir(name: str, environ: Mapping[str, str] | None = None) -> str:
    """``$XDG_CACHE_HOME/batchline/<name>`` (default ``~/.cache``): what batchline keeps between runs."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "batchline", name)


def content_key(paths: tuple[str, ...]) -> str:
    """A digest of the files' bytes."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:24]


def resolve_pkg_path(spec: str | os.PathLike[str], base_dir: str | os.PathLike[str] | None = None) -> str:
    """Absolute path for ``spec``: ``pkg://<package>/<path>`` inside the installed package
    (found without importing a top-level one; ValueError when not installed), a relative
    path against ``base_dir`` (the config file's directory), else the working directory."""
    spec = os.fspath(spec)
    if spec.startswith(PKG_SCHEME):
        package, _, rel = spec[len(PKG_SCHEME) :].partition("/")
        if not package:
            raise ValueError(f"bad package path {spec!r}: expected pkg://<package>/<path>")
        try:
            found = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise ValueError(f"package {package!r} of {spec!r} is not installed")
        locations = list(found.submodule_search_locations or [])
        if not locations:
            raise ValueError(f"{package!r} of {spec!r} is a module, not a package")
        for location in locations:
            candidate = os.path.join(location, rel)
            if os.path.exists(candidate):
                return os.path.abspath(candidate)
        return os.path.abspath(os.path.join(locations[0], rel))
    path = os.path.expanduser(spec)
    if not os.path.isabs(path) and base_dir is not None:
        path = os.path.join(os.fspath(base_dir), path)
    return os.path.abspath(path)


def model_files(model_dir: str) -> tuple[str, str]:
    """``(program file, params file)`` of a Paddle model directory (PIR ``.json`` preferred);
    :class:`FileNotFoundError` naming the directory and the missing file."""
    if not model_dir or not os.path.exists(model_dir):
        raise FileNotFoundError(f"model directory not found: {model_dir}")
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"not a directory: {model_dir}")
    program = next(
        (os.path.join(model_dir, n) for n in MODEL_GRAPH_FILES if os.path.isfile(os.path.join(model_dir, n))), None
    )
    if program is None:
        raise FileNotFoundError(f"{model_dir} has no {' or '.join(MODEL_GRAPH_FILES)}")
    params = os.path.join(model_dir, MODEL_PARAMS_FILE)
    if not os.path.isfile(params):
        raise FileNotFoundError(f"{model_dir} has no {MODEL_PARAMS_FILE}")
    return program, params


def openvino_model_file(model_dir: str) -> str:
    """The file OpenVINO Runtime reads from ``model_dir``; :class:`FileNotFoundError` naming
    what it lacks (a PIR ``inference.json`` alone: unreadable, with the way out)."""
    for name in OPENVINO_MODEL_FILES:
        path = os.path.join(model_dir, name)
        if os.path.isfile(path):
            return path
    if os.path.isfile(os.path.join(model_dir, "inference.json")):
        raise FileNotFoundError(
            f"{model_dir} has only a Paddle PIR program (inference.json), which OpenVINO cannot read: "
            "export an inference.onnx beside it (paddle2onnx --model_dir DIR --model_filename inference.json "
            "--params_filename inference.pdiparams --save_file DIR/inference.onnx) or use engine: paddle"
        )
    raise FileNotFoundError(f"{model_dir} has no {' or '.join(OPENVINO_MODEL_FILES)}")


def torch_model_files(model_dir: str) -> tuple[str, ...]:
    """``(inference.onnx,)``, or ``(inference.pdmodel, inference.pdiparams)`` to convert;
    :class:`FileNotFoundError` naming what ``model_dir`` lacks."""
    onnx_path = os.path.join(model_dir, TORCH_ONNX_FILE)
    if os.path.isfile(onnx_path):
        return (onnx_path,)
    _, params = model_files(model_dir)  # names a missing directory, program or params file
    program = os.path.join(model_dir, "inference.pdmodel")
    if not os.path.isfile(program):
        raise FileNotFoundError(
            f"{model_dir} has only a Paddle PIR program (inference.json), which paddle2onnx 1.3 cannot read: "
            "export an inference.onnx beside it (paddle2onnx 2.x: --model_dir DIR --model_filename inference.json "
            "--params_filename inference.pdiparams --save_file DIR/inference.onnx)"
        )
    return program, params
