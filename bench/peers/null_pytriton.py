"""The null op on Triton through PyTriton (Triton's C++ HTTP front, KServe v2
JSON) as its docs show it: dynamic batching (max batch 32, 1 ms queue delay),
one Python model instance per core. Runs in the PyTriton environment, on CPU.

    python -m bench.peers.null_pytriton --port 8000 --workers 2
    POST /v2/models/null/infer
      {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["..."]}]}
    -> {"outputs": [{"name": "length", ..., "data": [n]}]}
"""

from __future__ import annotations

import argparse

import numpy as np
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig


@batch
def infer(text: np.ndarray) -> dict[str, np.ndarray]:
    return {"length": np.array([[len(t[0])] for t in text], dtype=np.int64)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    config = TritonConfig(
        http_address="127.0.0.1", http_port=args.port, grpc_port=args.port + 1, metrics_port=args.port + 2
    )
    with Triton(config=config) as triton:
        triton.bind(
            model_name="null",
            infer_func=[infer] * args.workers,  # one model instance per function
            inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
            outputs=[Tensor(name="length", dtype=np.int64, shape=(1,))],
            config=ModelConfig(max_batch_size=32, batcher=DynamicBatcher(max_queue_delay_microseconds=1000)),
            strict=False,
        )
        triton.serve()


if __name__ == "__main__":
    main()
