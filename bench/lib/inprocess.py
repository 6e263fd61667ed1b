"""An op and its predictor runners in this process, built from a config
exactly as the server builds them (same class, params, predictor settings)."""

from __future__ import annotations

from typing import Any

from bench.lib.script import BenchError


def load_op(config_path: str, op_name: str) -> Any:
    """The loaded op ``op_name`` of ``config_path``, without predictors."""
    from serving.batching.launch import make_op as make_configured_op
    from serving.config import load_config

    config = load_config(config_path)
    if op_name not in config.op:
        raise BenchError(f"no op {op_name!r} in {config_path}")
    op = make_configured_op(config.op[op_name])
    op.load()
    return op


def make_op(config_path: str, op_name: str, instances: int = 1) -> tuple[Any, list[Any]]:
    """(op, runners) built from ``config_path`` the way the server builds them (``instances=0``: no runners)."""
    from serving.batching.launch import runners_for

    op = load_op(config_path, op_name)
    return op, runners_for(op, instances) if instances else []
