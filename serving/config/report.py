"""A config as text: the resolved op table and the DAG, shown by
``batchline check`` and logged by ``batchline serve`` at start-up."""

from __future__ import annotations

from typing import Any

from serving.config.dag import Dag

TABLE_COLUMNS = (
    ("op", "op"),
    ("class", "class"),
    ("inputs", "inputs"),
    ("max_batch_size", "max_batch"),
    ("max_queue_delay", "delay_ms"),
    ("preferred_batch_size", "preferred"),
    ("batching_policy", "policy"),
    ("concurrency", "concurrency"),
    ("instance_num", "instances"),
    ("instance_mode", "mode"),
    ("device", "device"),
    ("precision", "precision"),
    ("model", "model"),
)


def _cell(key: str, value: Any) -> str:
    if key == "inputs":
        return ",".join(value) if value else "(request)"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) if value else "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_op_table(rows: list[dict[str, Any]]) -> str:
    """Rows of ``ServingConfig.op_table()`` as an aligned text table."""
    header = [title for _, title in TABLE_COLUMNS]
    body = [[_cell(key, row.get(key, "")) for key, _ in TABLE_COLUMNS] for row in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in [header, *body])


def format_dag(dag: Dag) -> str:
    """The DAG's order and edges, ``request`` feeding sources and sinks feeding ``response``."""
    separator = " -> " if _is_chain(dag) else ", "
    lines = ["dag order: " + separator.join(dag.order)]
    lines += [f"  request -> {name}" for name in dag.sources]
    lines += [f"  {src} -> {dst}" for src, dst in dag.edges()]
    lines += [f"  {name} -> response" for name in dag.sinks]
    if len(dag.sinks) > 1:
        lines.append("  (several sinks: the response is a mapping {sink: output})")
    return "\n".join(lines)


def _is_chain(dag: Dag) -> bool:
    return all(len(dag.inputs(n)) <= 1 and len(dag.consumers(n)) <= 1 for n in dag.order)
