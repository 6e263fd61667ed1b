"""The ``batchline`` console script. Each subcommand is a module with ``add_arguments(parser)``
and ``main(args) -> int`` (its docstring's first line is its help), imported only when run;
others plug in through the ``batchline.commands`` entry points (the server never imports the client).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from types import ModuleType

from serving.config.errors import ConfigError

ENTRY_POINT_GROUP = "batchline.commands"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

Loader = Callable[[], ModuleType]


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        metavar="FILE",
        nargs="+",
        help="config.yml path, pkg://package/file.yml, or a directory (its *.yml and *.yaml); "
        "several are checked together, as one server would serve them",
    )


def check_main(args: argparse.Namespace) -> int:
    """Validate config files without loading any model; print each pipeline's op table (one file:
    and its DAG; several: and the routes and shared ops across them)."""
    from serving.config import load_repository
    from serving.config.report import format_dag, format_op_table, format_repository

    try:
        repo = load_repository(args.files)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    out = sys.stdout
    for file in repo.files:
        out.write(f"{file}: OK\n")
    if repo.files != args.files or len(repo.files) > 1:
        out.write("\n" + format_repository(repo) + "\n")
        return 0
    config = repo.pipelines[0]
    base = f"http://{config.host}:{config.http_port}/{config.name}"
    out.write(f"pipeline '{config.name}': POST {base}/prediction\n")
    if config.version is not None:
        out.write(f"pipeline '{config.name}' version {config.version}: POST {base}/v{config.version}/prediction\n")
    out.write("\n" + format_op_table(config.op_table()) + "\n\n")
    out.write(format_dag(config.dag_graph) + "\n")
    return 0


def _load_serve() -> ModuleType:
    from serving.commands import serve

    return serve


def _load_ray() -> ModuleType:
    from serving.commands import ray

    return ray


def _load_paddle_serving_path() -> ModuleType:
    from serving.commands import paddle_serving_path

    return paddle_serving_path


def builtin_commands() -> dict[str, tuple[str, Loader | None]]:
    """The server's own commands: name -> (help, module loader; None: this module's check)."""
    return {
        "check": ("validate configs (files or directories) and print the resolved op tables and routes", None),
        "serve": ("start the HTTP server for a config (default: the embedded OCR pipeline)", _load_serve),
        "ray": ("Ray Serve tools: build writes the Ray Serve config file of configs", _load_ray),
        "paddle-serving-path": (
            "print the folder to put on PYTHONPATH to run Paddle Serving's own clients as they are",
            _load_paddle_serving_path,
        ),
    }


def plugin_commands() -> dict[str, Loader]:
    """Commands registered by installed packages in the ``batchline.commands`` group."""
    return {ep.name: ep.load for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _unavailable(command: str, error: str) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        sys.stderr.write(f"batchline {command}: not available: {error}\n")
        return 1

    return handler


def _add_module_command(
    subparsers: argparse._SubParsersAction, command: str, load: Loader, help_text: str | None, chosen: bool
) -> None:
    if not chosen and help_text is not None:  # listed in --help, not run: no need to import it
        subparsers.add_parser(command, help=help_text)
        return
    try:
        module = load()
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the other commands down
        error = f"{type(exc).__name__}: {exc}"
        parser = subparsers.add_parser(command, help=f"(not available: {error})", description=f"not available: {error}")
        parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        parser.set_defaults(handler=_unavailable(command, error))
        return
    text = help_text or (module.__doc__ or "").strip().split("\n")[0].replace("``", "")
    parser = subparsers.add_parser(command, help=text, description=text)
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
    """The argument parser, importing only the module of the command named in ``argv``."""
    parser = argparse.ArgumentParser(
        prog="batchline", description="Inference pipeline server with per-op dynamic batching."
    )
    parser.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS, help="logging level (default: INFO)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    chosen = _chosen_command(argv)
    for command, (help_text, load) in builtin_commands().items():
        if load is None:
            check = subparsers.add_parser(command, help=help_text, description=check_main.__doc__)
            add_check_arguments(check)
            check.set_defaults(handler=check_main)
        else:
            _add_module_command(subparsers, command, load, help_text, chosen == command)
    for command, load in sorted(plugin_commands().items()):
        if command in builtin_commands():
            continue
        # a plugin's help is its module's docstring, so listing it means importing it
        if chosen is None or chosen == command:
            _add_module_command(subparsers, command, load, None, True)
        else:
            subparsers.add_parser(command, help="")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``batchline``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen_command(argv)
    if chosen is not None and chosen not in builtin_commands() and chosen not in plugin_commands():
        known = ", ".join([*builtin_commands(), *sorted(plugin_commands())])
        sys.stderr.write(
            f"batchline: unknown command {chosen!r} (commands: {known}); the client's commands "
            f"(predict, bench, pipelines) are registered when batchline is installed: pip install -e .\n"
        )
        return 2
    script_args: list[str] = []
    if chosen == "serve":  # a Paddle Serving script's own arguments follow it
        argv, script_args = _load_serve().split_argv(argv)
    args = build_parser(argv).parse_args(argv)
    args.script_args = script_args
    logging.basicConfig(
        level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return int(args.handler(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
