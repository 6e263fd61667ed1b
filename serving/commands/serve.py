"""Start the HTTP server for configs (default: the embedded OCR pipeline), in
this process or on Ray Serve (``--ray``)."""

from __future__ import annotations

import argparse
import logging

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
