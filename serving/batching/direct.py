"""Run ops in-process without the engine, one request at a time: the no-server
reference that tests and benchmarks compare the served pipeline with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from serving.batching.execute import run_batch
from serving.op import Op, Runner


def run_op_direct(op: Op, runner: Runner, inputs: Mapping[str, Any], *, max_batch_size: int | None = None) -> Any:
    """Run one request through one op: expand, preprocess, batch, run, merge."""
    items = [op.preprocess(p) for p in op.expand(inputs)]
    results: list[Any] = []
    step = max_batch_size or max(1, len(items))
    for start in range(0, len(items), step):
        chunk = items[start : start + step]
        outputs, _ = run_batch(op, runner, chunk, run_sizes=[])
        results += [op.postprocess(item, out) for item, out in zip(chunk, outputs)]
    return op.merge(inputs, results)


def run_chain_direct(ops: Sequence[tuple[Op, Runner]], value: Any, *, max_batch_size: int | None = None) -> Any:
    """Run a linear chain of (op, runner) pairs on one request value."""
    inputs: dict[str, Any] = {"input": value}
    output: Any = None
    for op, runner in ops:
        output = run_op_direct(op, runner, inputs, max_batch_size=max_batch_size)
        inputs = {op.name: output}
    return output
