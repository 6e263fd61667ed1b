"""Run ops in-process without the engine: the same hooks, one request at a time.

Used as the no-server reference (tests compare the served pipeline with it;
benchmarks measure the server's overhead against it) and for quick scripts.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from serving.op import Op


def run_op_direct(op: Op, runner: Any, inputs: Mapping[str, Any], *, max_batch_size: int | None = None) -> Any:
    """Run one request through one op: expand, preprocess, batch, run, merge."""
    payloads = list(op.expand(inputs))
    items = [op.preprocess(p) for p in payloads]
    results: list[Any] = [None] * len(items)
    step = max_batch_size or max(1, len(items))
    for start in range(0, len(items), step):
        chunk = items[start:start + step]
        for sub in op.collate(chunk):
            outputs = op.run(runner, sub.feed)
            for idx, out in zip(sub.indices, op.uncollate(sub, outputs)):
                results[start + idx] = op.postprocess(chunk[idx], out)
    return op.merge(inputs, results)


def run_chain_direct(ops: Sequence[tuple[Op, Any]], value: Any, *, max_batch_size: int | None = None) -> Any:
    """Run a linear chain of (op, runner) pairs on one request value."""
    inputs: dict[str, Any] = {"input": value}
    output: Any = None
    for op, runner in ops:
        output = run_op_direct(op, runner, inputs, max_batch_size=max_batch_size)
        inputs = {op.name: output}
    return output
