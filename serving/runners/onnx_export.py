"""The ONNX file ``engine: torch`` and ``engine: onnxruntime`` run for a model directory: its
``inference.onnx``, or its Paddle model converted once by paddle2onnx into a
cache folder (``$BATCHLINE_ONNX_CACHE``, else ``$XDG_CACHE_HOME/batchline/onnx``),
named after the files' content and the converter's version, written atomically.
A machine without Paddle runs on a cache filled elsewhere (docs/DEPLOY.md, "GPU")::

    BATCHLINE_ONNX_CACHE=DIR python -m serving.runners.onnx_export configs/ocr_gpu.yml
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import tempfile
import time
from collections.abc import Mapping, Sequence

from serving.config.engines import ENGINES
from serving.paths import TORCH_ONNX_FILE, content_key, torch_model_files, user_cache_dir

log = logging.getLogger(__name__)

CACHE_ENV = "BATCHLINE_ONNX_CACHE"
# the opset asked of paddle2onnx (it raises it where an operator needs a newer one)
OPSET = 11


def cache_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return os.path.abspath(env[CACHE_ENV])
    return user_cache_dir("onnx", env)


def cached_prefix(model_dir: str, key: str) -> str:
    return f"{os.path.basename(os.path.normpath(model_dir))}-{key}-paddle2onnx"


def onnx_file(model_dir: str, environ: Mapping[str, str] | None = None) -> str:
    """The ONNX file to run for ``model_dir``: its own, or the cached conversion (made now
    if missing; without a converter, a carried conversion by any version). Raises
    FileNotFoundError naming what is missing, RuntimeError where paddle2onnx is needed."""
    files = torch_model_files(model_dir)
    if os.path.basename(files[0]) == TORCH_ONNX_FILE:
        return files[0]
    folder = cache_dir(environ)
    version = converter_version()
    prefix = cached_prefix(model_dir, content_key(files))
    if version == "missing":
        carried = sorted(glob.glob(os.path.join(glob.escape(folder), prefix + "*.onnx")))
        if carried:
            return carried[-1]
        raise RuntimeError(
            f"engine: torch and engine: onnxruntime run {model_dir} as ONNX; no conversion of it is in {folder} and "
            f"paddle2onnx (1.3, with Paddle) is not installed: pip install -e '.[torch]' (or '.[onnxruntime]'), "
            f"or fill {CACHE_ENV} on a machine that has them (python -m serving.runners.onnx_export CONFIG), or put an "
            f"{TORCH_ONNX_FILE} in the model directory"
        )
    path = os.path.join(folder, f"{prefix}{version}.onnx")
    if os.path.isfile(path):
        return path
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


def reads_onnx(engine: str) -> bool:
    """Whether ``engine`` runs a model's ONNX form (this module's file): ``torch``, ``onnxruntime``."""
    return ENGINES[engine].model_files is torch_model_files


def torch_model_dirs(sources: Sequence[str]) -> list[str]:
    """The model folders of every op of the config files (or folders) ``sources`` whose engine runs
    the ONNX form (``engine: torch`` or ``engine: onnxruntime``)."""
    from serving.config.file_set import load_repository

    repository = load_repository(sources)
    folders = {
        op.local_service_conf.model_config
        for pipeline in repository.pipelines
        for op in pipeline.op.values()
        if reads_onnx(op.local_service_conf.engine) and op.local_service_conf.model_config
    }
    return sorted(str(f) for f in folders)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m serving.runners.onnx_export",
        description="Convert the models of every engine: torch or engine: onnxruntime op of the configs into the "
        f"ONNX cache (${CACHE_ENV}, else ~/.cache/batchline/onnx), for a machine that cannot convert them itself.",
    )
    ap.add_argument("configs", nargs="+", help="config files or folders, as for batchline serve")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    folders = torch_model_dirs(args.configs)
    if not folders:
        log.error("no op of %s runs on engine: torch or engine: onnxruntime", " ".join(args.configs))
        return 1
    for folder in folders:
        log.info("%s -> %s", folder, onnx_file(folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
