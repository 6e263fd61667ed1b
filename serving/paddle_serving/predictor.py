"""An op's model as Paddle Serving's ``LocalPredictor`` presents it to ``process``:
``predict(feed, fetch, batch, log_id)`` -> a dict keyed by the fetch names asked for. It runs
on one of batchline's runners (OpenVINO Runtime, Paddle Inference, PyTorch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from serving.op import Runner
from serving.paddle_serving.model_folder import ModelFolder

# Paddle Serving's feed_type -> numpy dtype
FEED_DTYPES = {
    0: "int64",
    1: "float32",
    2: "int32",
    3: "float64",
    4: "int16",
    5: "float16",
    6: "uint16",
    7: "uint8",
    8: "int8",
    9: "bool",
    10: "complex64",
    11: "complex128",
}


class LocalPredictor:
    """One model instance. ``runner``: what runs it; ``folder``: its serving model folder."""

    def __init__(self, runner: Runner, folder: ModelFolder):
        self.runner = runner
        self.folder = folder
        self.feed_types_ = {v.alias_name: v.type for v in folder.feed_vars}
        self.feed_shapes_ = {v.alias_name: list(v.shape) for v in folder.feed_vars}
        self.output_names = list(getattr(runner, "output_names", []) or folder.fetch_aliases)
        # without a prototxt (a plain inference folder): the model's own names
        self.feed_names_ = [v.alias_name for v in folder.feed_vars] or list(runner.input_names)
        self.fetch_names_ = folder.fetch_aliases or list(self.output_names)

    def _feed_array(self, name: str, value: Any) -> Any:
        if isinstance(value, list) and value and not isinstance(value[0], str):
            value = np.array(value).reshape(self.feed_shapes_[name]) if name in self.feed_shapes_ else np.array(value)
        kind = self.feed_types_.get(name)
        if kind is not None and isinstance(value, np.ndarray):
            if kind not in FEED_DTYPES:
                raise ValueError("local predictor receives wrong data type")
            value = value.astype(FEED_DTYPES[kind])
        return value

    def predict(self, feed: Any = None, fetch: Any = None, batch: bool = False, log_id: Any = 0) -> dict[str, Any]:
        if feed is None:
            raise ValueError(f"You should specify feed vars for prediction. log_id:{log_id}")
        if isinstance(feed, list):
            feed = feed[0] if len(feed) == 1 else _concat(feed)
        if not isinstance(feed, dict):
            raise ValueError(f"Feed only accepts dict and list of dict. log_id:{log_id}")
        inputs = {}
        for name in self.runner.input_names:
            if name not in feed:
                raise KeyError(name)
            array = self._feed_array(name, feed[name])
            inputs[name] = array if batch else array[np.newaxis, :]
        outputs = self.runner.run(inputs)
        names = self.output_names
        if fetch is None:
            return dict(zip(names, outputs))
        wanted = [fetch] if isinstance(fetch, str) else list(fetch)
        index = {name: i for i, name in enumerate(names)}
        fetch_map = {name: outputs[index[name]] for name in wanted if name in index}
        if not fetch_map:  # aliases the runtime does not know (e.g. save_infer_model/...): by position
            fetch_map = {name: outputs[i] for i, name in enumerate(wanted) if i < len(outputs)}
        return fetch_map


def _concat(feeds: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {key: np.concatenate([f[key] for f in feeds], axis=0) for key in feeds[0]}
