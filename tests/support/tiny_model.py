"""A tiny real Paddle model for runner tests: Linear(4, 3) + ReLU saved with a
dynamic batch dimension, and the numpy answer it must give."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from serving.config import LocalServiceConf


def save_tiny_model(out_dir: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """Write ``inference.*`` into ``out_dir``; returns (dir, W, b)."""
    import paddle

    paddle.seed(7)
    layer = paddle.nn.Sequential(paddle.nn.Linear(4, 3), paddle.nn.ReLU())
    layer.eval()
    paddle.jit.save(layer, str(out_dir / "inference"), input_spec=[paddle.static.InputSpec([None, 4], "float32", "x")])
    weight = layer[0].weight.numpy()  # paddle Linear: y = x @ W + b, W is [in, out]
    bias = layer[0].bias.numpy()
    return out_dir, weight, bias


def expected(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.maximum(x @ weight + bias, 0.0)


def make_conf(model_dir: Path | str | None, **service: object) -> LocalServiceConf:
    """The real config type, as ``op.<name>.local_service_conf`` would give it (1 thread by default)."""
    return LocalServiceConf(
        model_config=str(model_dir) if model_dir else None,  # type: ignore[arg-type]
        **{"thread_num": 1, **service},
    )
