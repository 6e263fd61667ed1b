"""Start the HTTP server for configs (default: the embedded OCR pipeline), in
this process or on Ray Serve (``--ray``)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from serving import server
from serving.config import ConfigError
from serving.paddle_serving.launch import is_service_script
from serving.service.auth import auth_token
from serving.service.exposure import OpenBindRefused, check_bind

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    server.add_arguments(parser)
    parser.add_argument(
        "--ray",
        action="store_true",
        help="run every op as a Ray Serve deployment (needs the ray extra: pip install -e '.[ray]')",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="with --ray: the cluster to deploy on ('auto': the one `ray start` made on this machine; "
        "'ray://HOST:10001': a remote one); default: start a local cluster for this command",
    )


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``batchline serve [options] web_service.py [its arguments]``: after a Paddle Serving script, what
    ``python web_service.py ...`` would have been given is the script's (``-c config.yml``,
    ``--model_dir m``), but for ``serve``'s own options, which stay batchline's wherever they are; after
    ``--`` everything is the script's (for an option of the script's spelt as one of batchline's)."""
    argv = list(argv)
    script = next((i for i, a in enumerate(argv) if a.endswith(".py") and not a.startswith("-")), None)
    if script is None or "serve" not in argv[:script]:
        return argv, []
    probe = argparse.ArgumentParser(add_help=False)
    add_arguments(probe)
    # argparse's own table of option strings: whether each takes a value
    takes_value = {s: a.nargs != 0 for a in probe._actions for s in a.option_strings}  # noqa: SLF001
    ours, theirs = argv[: script + 1], []
    i = script + 1
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if arg == "--":
            theirs.extend(argv[i + 1 :])
            break
        if name in takes_value:
            value = takes_value[name] and "=" not in arg and i + 1 < len(argv)
            ours.extend(argv[i : i + 1 + value])
            i += 1 + value
            continue
        theirs.append(arg)
        i += 1
    return ours, theirs


def main(args: argparse.Namespace) -> int:
    if not args.ray:
        if args.address is not None:
            log.error("--address is for --ray")
            return 2
        return server.main(args)
    if args.front_workers:
        log.error("--front-workers is for the single-process server; on Ray, Ray Serve's proxies are the front")
        return 2
    if is_service_script(args.config):
        log.error("--ray serves batchline's configs; a Paddle Serving script is served without it")
        return 2
    try:
        from serving.config.documents import parse_documents, read_documents
        from serving.rayserve.deployments import op_deployments, ray_conf

        documents = read_documents(args.config)
        repo = parse_documents(documents)
        op_deployments(repo)  # deployment names and the application's blocks too: before a cluster starts
        ray_conf(repo)
        # Ray's proxies bind this address: the same rule as the single-process server's
        insecure = args.insecure or repo.security.insecure
        check_bind(args.host or repo.host, token=auth_token(repo.auth_token), insecure=insecure)
    except (ConfigError, OpenBindRefused) as exc:
        log.error("%s", exc)
        return 2
    if args.rpc_port is not None or repo.rpc_port is not None:
        log.warning(
            "rpc_port: gRPC (Paddle Serving's PipelineService, the Open Inference Protocol's gRPC service) is not "
            "served on Ray yet; the HTTP protocols are, on the HTTP port (docs/protocols.md)"
        )
    try:
        from serving.rayserve.run import serve_on_ray
    except ImportError as exc:
        log.error("--ray needs Ray Serve: pip install -e '.[ray]' (%s)", exc)
        return 2
    return serve_on_ray(documents, address=args.address, host=args.host, port=args.port, warmup=not args.no_warmup)
