"""The ``batchline`` console script.

``check`` lives here; ``serve``, ``predict`` and ``bench`` live in their own
modules, each exposing ``add_arguments(parser)`` and ``main(args) -> int``.
Only the module of the subcommand being run is imported, so ``batchline
check`` never imports the server, Paddle or a model.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
from types import MappingProxyType
from typing import Any, Sequence

# subcommand -> (module implementing it, one-line help)
LAZY_COMMANDS = MappingProxyType({
    "serve": ("serving.server", "start the HTTP server for a config (default: pkg://configs/ocr.yml)"),
    "predict": ("client.cli", "send inputs to a running server and print the answers"),
    "bench": ("client.bench", "load-test a running server"),
})
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TABLE_COLUMNS = (
    ("op", "op"), ("class", "class"), ("inputs", "inputs"), ("max_batch_size", "max_batch"),
    ("max_queue_delay", "delay_ms"), ("preferred_batch_size", "preferred"), ("batching_policy", "policy"),
    ("concurrency", "concurrency"), ("instance_num", "instances"), ("instance_mode", "mode"),
    ("device", "device"),
    ("precision", "precision"), ("model", "model"),
)


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------
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
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in [header] + body]
    return "\n".join(lines)


def format_dag(dag: Any) -> str:
    """The DAG's order and edges, ``request`` feeding sources and sinks feeding ``response``."""
    separator = " -> " if _is_chain(dag) else ", "
    lines = ["dag order: " + separator.join(dag.order)]
    lines += [f"  request -> {name}" for name in dag.sources]
    lines += [f"  {src} -> {dst}" for src, dst in dag.edges()]
    lines += [f"  {name} -> response" for name in dag.sinks]
    if len(dag.sinks) > 1:
        lines.append("  (several sinks: the response is a mapping {sink: output})")
    return "\n".join(lines)


def _is_chain(dag: Any) -> bool:
    return all(len(dag.inputs(n)) <= 1 and len(dag.consumers(n)) <= 1 for n in dag.order)


def _check_main(args: argparse.Namespace) -> int:
    from serving.config import ConfigError, load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    out = sys.stdout
    out.write(f"{args.file}: OK\n")
    url = f"http://{config.host}:{config.http_port}/{config.name}/prediction"
    out.write(f"pipeline '{config.name}': POST {url}\n\n")
    out.write(format_op_table(config.op_table()) + "\n\n")
    out.write(format_dag(config.dag_graph) + "\n")
    return 0


def _add_check(subparsers: Any) -> None:
    parser = subparsers.add_parser("check", help="validate a config and print the resolved op table",
                                   description="Validate a config file without loading any model.")
    parser.add_argument("file", metavar="FILE", help="config.yml path or pkg://package/file.yml")
    parser.set_defaults(handler=_check_main)


# ---------------------------------------------------------------------------
# lazily wired subcommands
# ---------------------------------------------------------------------------
def _unavailable(command: str, error: str):
    def handler(args: argparse.Namespace) -> int:
        sys.stderr.write(f"batchline {command}: not available: {error}\n")
        return 1
    return handler


def _add_lazy(subparsers: Any, command: str, load: bool) -> None:
    module_name, help_text = LAZY_COMMANDS[command]
    if not load:  # listed in --help, never run: the chosen command is another one
        subparsers.add_parser(command, help=help_text)
        return
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        error = f"{type(exc).__name__}: {exc}"
        parser = subparsers.add_parser(command, help=help_text, description=f"not available: {error}")
        parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        parser.set_defaults(handler=_unavailable(command, error))
        return
    parser = subparsers.add_parser(command, help=help_text, description=help_text)
    module.add_arguments(parser)
    parser.set_defaults(handler=module.main)


def _chosen_command(argv: Sequence[str]) -> str | None:
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--log-level":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser; only the module of the command named in ``argv`` is imported."""
    parser = argparse.ArgumentParser(
        prog="batchline", description="Inference pipeline server with per-op dynamic batching.")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                        help="logging level (default: INFO)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    chosen = _chosen_command(argv)
    _add_check(subparsers)
    for command in LAZY_COMMANDS:
        _add_lazy(subparsers, command, load=command == chosen)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``batchline``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.handler(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
