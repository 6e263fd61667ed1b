"""``batchline pipelines``: list the pipelines a server runs (``GET /pipelines``).

    batchline pipelines --url http://127.0.0.1:9999
    batchline pipelines --url ... --json

Prints the generation (it goes up by one on every reload), one line per
pipeline version (its state, what ``/{name}/prediction`` does with it, its
ops, shared ones with their share name, and its config file), then the routes
and the ops shared across pipelines. ``--json`` prints the server's answer as
it is. Exit status 1 if the server could not be asked (the error, with its
HTTP status, goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from .cli import TOKEN_HELP, resolve_token
from .pipeline_client import PipelineClient, PipelineError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:9999")
    parser.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the answer")


def _percent(share: float) -> str:
    return f"{round(100 * share, 1):g}%"


def _role(entry: dict[str, Any], route: dict[str, Any]) -> str:
    """What ``/{name}/prediction`` does with this version (the wording of ``batchline check``)."""
    shadow = route.get("shadow")
    if entry.get("shadow") and shadow:
        return f"shadow: a copy of {_percent(shadow['sample'])} of routed requests, answers not returned"
    weights = route.get("weights") or {}
    weight = entry.get("weight", 0)
    if not weight:
        return f"only at /{entry['name']}/v{entry['version']}"
    if len(weights) == 1:
        return "default"
    return f"{_percent(weight / sum(weights.values()))} of requests"


def _route_line(name: str, route: dict[str, Any]) -> str:
    weights = route.get("weights") or {}
    total = sum(weights.values()) or 1
    if len(weights) <= 1:
        text = f"v{route['default']}"
    else:
        picks = ", ".join(f"v{v} {_percent(w / total)}" for v, w in weights.items())
        text = f"{picks} (sticky per {route.get('key_header')} header, else logid)"
    shadow = route.get("shadow")
    if shadow:
        text += (
            f"; shadow v{shadow['version']} gets {_percent(shadow['sample'])}, "
            f"at most {shadow['max_in_flight']} in flight"
        )
    return f"/{name}/prediction -> {text}"


def _ops(entry: dict[str, Any]) -> str:
    return ", ".join(
        f"{op['op']} (shared: {op['shared']})" if op.get("shared") else str(op["op"]) for op in entry.get("ops", [])
    )


def format_listing(listing: dict[str, Any]) -> list[str]:
    """Human-readable lines for a ``GET /pipelines`` answer."""
    routes = listing.get("routes", {})
    lines = [f"generation {listing.get('generation')}, {'ready' if listing.get('ready') else 'not ready'}"]
    rows = [
        (
            f"{entry['name']} v{entry['version']}",
            str(entry.get("state")),
            _role(entry, routes.get(entry["name"], {})),
            _ops(entry),
            str(entry.get("source") or ""),
        )
        for entry in listing.get("pipelines", [])
    ]
    header = ("pipeline", "state", "route", "ops", "source")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        lines.append("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip())
    lines.append("routes:")
    lines.extend(f"  {_route_line(name, route)}" for name, route in routes.items())
    shared = listing.get("shared_ops") or {}
    if shared:
        lines.append("shared ops:")
        lines.extend(f"  {name}: {', '.join(users)}" for name, users in shared.items())
    else:
        lines.append("shared ops: none")
    return lines


def main(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    token = resolve_token(args.token)
    with PipelineClient(args.url, timeout=args.timeout, token=token) as client:
        try:
            listing = client.pipelines()
        except PipelineError as e:
            err.write(f"error: {e if e.status else f'no answer (status 0): {e.message}'}\n")
            return 1
    if args.json:
        out.write(json.dumps(listing, ensure_ascii=False, indent=2) + "\n")
    else:
        out.write("\n".join(format_listing(listing)) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchline pipelines", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
