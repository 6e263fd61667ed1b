"""Ray Serve tools: ``batchline ray build CONFIG... -o serve.yaml`` writes the Ray Serve config
file of the configs. A config holding a token is refused: the file is read by more people
than the token should be (repositories, KubeRay specs, Ray's dashboard).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence

from serving.config import ConfigError
from serving.config.documents import ConfigDocument, read_documents
from serving.config.errors import SECRET_KEYS
from serving.service.auth import ADMIN_TOKEN_ENV, TOKEN_ENV

# each secret config key -> the environment variable a replica reads it from instead
ENV_OF_SECRET: Mapping[str, str] = {"auth_token": TOKEN_ENV, "admin_token": ADMIN_TOKEN_ENV}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="ray_command", metavar="RAY_COMMAND")
    sub.required = True
    build = sub.add_parser("build", help="write the Ray Serve config file of pipeline configs")
    build.add_argument("config", nargs="+", metavar="CONFIG", help="config.yml files or directories, as for serve")
    build.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    build.add_argument("--host", default=None, help="HTTP bind address of Ray's proxies (default: config 'host')")
    build.add_argument("--port", type=int, default=None, help="HTTP port (default: config 'http_port')")
    build.add_argument("--no-warmup", action="store_true", help="replicas skip warming predictor shapes")


def main(args: argparse.Namespace) -> int:
    try:
        documents = read_documents(args.config)
        from serving.rayserve.app import serve_config
        from serving.rayserve.run import build_notes, serve_config_yaml

        secret = literal_secrets(documents)
        if secret is not None:
            raise secret

        config = serve_config(documents, host=args.host, port=args.port, warmup=not args.no_warmup)
        notes = build_notes(documents)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except ImportError as exc:
        sys.stderr.write(f"batchline ray: needs Ray Serve: pip install -e '.[ray]' ({exc})\n")
        return 2
    text = serve_config_yaml(config, "batchline ray build " + " ".join(shlex.quote(c) for c in args.config), notes)
    for note in notes:
        sys.stderr.write(f"batchline ray build: {note}\n")
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        sys.stderr.write(f"wrote {args.output}: deploy with `serve deploy {args.output}`\n")
    return 0


def literal_secrets(documents: Sequence[ConfigDocument]) -> ConfigError | None:
    """One error naming every file and key that holds a token (never its value), or None."""
    errors = []
    for doc in documents:
        data = doc.data if isinstance(doc.data, Mapping) else {}
        for key in sorted(SECRET_KEYS):  # every key the config layer keeps out of messages
            if data.get(key):
                errors.append(
                    ConfigError(
                        doc.source,
                        key,
                        "a token would be written into the Ray Serve config (and shown by Ray's dashboard): "
                        f"remove it from the config and give the replicas {ENV_OF_SECRET[key]} in their environment "
                        "(on Kubernetes from a Secret, as deploy/ray/rayservice.yaml does)",
                    )
                )
    return ConfigError.combine(errors) if errors else None
