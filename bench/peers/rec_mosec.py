"""PP-OCRv4 rec (configs/rec.yml's model on OpenVINO Runtime f32, one 1-thread
instance per worker process) on mosec, as its docs build a pipeline: a
``Preprocess`` stage that decodes the PNG body and resizes/normalizes it, and
an ``Inference`` stage that runs the model, with mosec's dynamic batching
(``--max-batch 1`` turns it off). Runs in the mosec environment that sees the
project's packages (bench/lib/served_rec_contenders.py ``MOSEC_REC``), so the
pre/post-processing and the compiled model are the project's own: only the
server differs.

    python -m bench.peers.rec_mosec --port 8000 --workers 2 --max-batch 32 --wait-ms 5
    POST /inference <PNG bytes> -> {"text": ..., "score": ...}
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import cv2
import numpy as np
from mosec import Server, Worker

CONFIG = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs", "rec.yml"
)


def _rec_op(instances: int) -> tuple[Any, list[Any]]:
    from bench.lib.inprocess import make_op

    return make_op(CONFIG, "rec", instances)


class Preprocess(Worker):
    """PNG bytes -> the op's RecItem (a float32 crop at the model's height)."""

    def __init__(self) -> None:
        super().__init__()
        self.op, _ = _rec_op(0)

    def deserialize(self, data: bytes) -> bytes:
        return data  # the raw PNG body: no JSON, no base64

    def forward(self, data: bytes) -> Any:
        crop = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        return self.op.preprocess(crop)


class Inference(Worker):
    """A batch of RecItems -> (text, score) each: padded per width bucket, one model call per bucket."""

    def __init__(self) -> None:
        super().__init__()
        self.op, (self.runner,) = _rec_op(1)

    def forward(self, data: Any) -> Any:
        from serving.batching.execute import run_batch

        items = data if isinstance(data, list) else [data]
        outputs, _ = run_batch(self.op, self.runner, items, run_sizes=[])
        answers = [self.op.postprocess(item, out) for item, out in zip(items, outputs)]
        out = [{"text": text, "score": float(score)} for text, score in answers]
        return out if isinstance(data, list) else out[0]

    def serialize(self, data: Any) -> bytes:
        return json.dumps(data, ensure_ascii=False).encode()


def _flag(name: str, default: int) -> int:
    # mosec parses the rest of argv itself (--port, --timeout ...)
    if name not in sys.argv:
        return default
    i = sys.argv.index(name)
    value = int(sys.argv[i + 1])
    del sys.argv[i : i + 2]
    return value


def main() -> None:
    workers = _flag("--workers", 2)
    max_batch = _flag("--max-batch", 1)
    wait_ms = _flag("--wait-ms", 5)
    server = Server()
    server.append_worker(Preprocess, num=1)
    if max_batch > 1:
        server.append_worker(Inference, num=workers, max_batch_size=max_batch, max_wait_time=wait_ms)
    else:
        server.append_worker(Inference, num=workers)
    server.run()


if __name__ == "__main__":
    main()
