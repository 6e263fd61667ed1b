"""The null op: a model that costs nothing (text in, its length out), served
by batchline as a user would (``batchline serve`` on a config naming this op),
so that what a request costs is what the server spends around the model."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from serving.op import Op, SubBatch

NAME = "null"
#: dynamic batching as every contender gets it: up to 32 items, about 1 ms of waiting
MAX_BATCH = 32
WAIT_MS = 1.0


class LengthRunner:
    """The "model": returns its input (each text's length) unchanged."""

    input_names = ["x"]

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return [feed["x"]]

    def close(self) -> None:
        pass


class NullOp(Op):
    """Text in, ``{"length": len(text)}`` out, batched across requests."""

    input_kind = "text"
    needs_model = False

    def create_runners(self, count: int) -> list[LengthRunner]:
        return [LengthRunner() for _ in range(count)]

    def collate(self, items: Sequence[Any]) -> list[SubBatch]:
        x = np.fromiter((len(t) for t in items), dtype=np.int64, count=len(items))
        return [SubBatch(indices=list(range(len(items))), feed={"x": x})]

    def uncollate(self, sub: SubBatch, outputs: list[np.ndarray]) -> list[Any]:
        return outputs[0].tolist()

    def postprocess(self, item: Any, output: Any) -> Any:
        return {"length": int(output)}

    def warmup_items(self) -> list[Any]:
        return ["warm"]


def null_config(instances: int = 2) -> dict[str, Any]:
    """The config a user would write: one op, ``instances`` runners (one per core),
    dynamic batching on, a queue deep enough for 64 clients."""
    return {
        "name": NAME,
        "worker_num": 16,
        "dag": {"request_timeout_ms": 30000, "max_queue_size": 256},
        "op": {
            NAME: {
                "class": f"{__name__}:NullOp",
                "local_service_conf": {
                    "instance_num": instances,
                    "max_batch_size": MAX_BATCH,
                    "max_queue_delay": WAIT_MS,
                },
            }
        },
    }


def write_null_config(folder: str, instances: int = 2, front: str | None = None) -> str:
    """``null_config`` as YAML in ``folder`` (``front``: its ``http.front``; None: the default); its path."""
    import yaml

    config = null_config(instances)
    if front is not None:
        config["http"] = {"front": front}
    path = os.path.join(folder, f"{NAME}-{front or 'default'}.yml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path
