"""Configs as text for ``batchline check`` and the start-up log."""

from __future__ import annotations

from typing import Any

from serving.config.dag import Dag
from serving.config.file_set import RepositoryConfig, Route
from serving.config.schema import ServingConfig

TABLE_COLUMNS = (
    ("op", "op"),
    ("class", "class"),
    ("inputs", "inputs"),
    ("max_batch_size", "max_batch"),
    ("max_batch_units", "max_units"),
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
    if value is None:
        return "-"
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


def _percent(part: float, whole: float = 1.0) -> str:
    return f"{round(100 * part / whole, 1):g}%"


def _route_role(route: Route, version: int) -> str | None:
    """What ``/{name}/prediction`` does with ``version``, or None when it never reaches it."""
    if route.shadow is not None and route.shadow.version == version:
        return f"shadow: a copy of {_percent(route.shadow.sample)} of routed requests, answers not returned"
    if version not in route.weights:
        return None
    if len(route.weights) == 1:
        return "default"
    return f"{_percent(route.weights[version], sum(route.weights.values()))} of requests"


def format_endpoints(repo: RepositoryConfig, config: ServingConfig) -> str:
    """The URLs that reach ``config`` in ``repo``."""
    base = f"http://{repo.host}:{repo.http_port}/{config.name}"
    version = config.effective_version
    lines = [f"  POST {base}/v{version}/prediction"]
    role = _route_role(repo.routes[config.name], version)
    if role is not None:
        lines.append(f"  POST {base}/prediction ({role})")
    return "\n".join(lines)


def format_route(route: Route) -> str:
    """One line: how ``/{name}/prediction`` picks a version, and its shadow."""
    total = sum(route.weights.values())
    if len(route.weights) == 1:
        text = f"v{route.default}"
    else:
        picks = ", ".join(f"v{v} {_percent(w, total)}" for v, w in route.weights.items())
        text = f"{picks} (sticky per {route.key_header} header, else logid)"
    if route.shadow is not None:
        shadow = route.shadow
        text += f"; shadow v{shadow.version} gets {_percent(shadow.sample)}, at most {shadow.max_in_flight} in flight"
    return f"/{route.name}/prediction -> {text}"


def format_repository(repo: RepositoryConfig) -> str:
    """Each pipeline's endpoints and op table, then the routes and the shared ops."""
    blocks = [
        f"server: http://{repo.host}:{repo.http_port}, worker_num {repo.worker_num}, "
        f"max_queue_size {repo.max_queue_size} (all pipelines)"
    ]
    for config, file in zip(repo.pipelines, repo.files):
        head = f"pipeline '{config.name}' version {config.effective_version} ({file})"
        blocks.append(f"{head}\n{format_endpoints(repo, config)}\n\n{format_op_table(config.op_table())}")
    blocks.append("routes:\n" + "\n".join(f"  {format_route(route)}" for route in repo.routes.values()))
    if repo.shares:
        lines = []
        for shared in repo.shares.values():
            users = ", ".join(f"{c.name} v{c.effective_version} op {op}" for c, op in shared.users)
            lines.append(f"  {shared.name}: {users} (one stage, built from the first)")
        blocks.append("shared ops:\n" + "\n".join(lines))
    else:
        blocks.append("shared ops: none")
    return "\n\n".join(blocks)
