"""A repository of configs as a Ray Serve application, and as a Ray Serve config file whose
``args`` carry the config files themselves, so every replica parses the same configs.
"""

from __future__ import annotations

from typing import Any

from ray import serve
from ray.serve import Application

from serving.config.documents import ConfigDocument, parse_documents
from serving.rayserve.deployments import (
    IMPORT_PATH,
    INGRESS,
    METRICS_HUB,
    app_name,
    deployment_options,
    op_deployments,
    ray_conf,
)
from serving.rayserve.ingress import Ingress
from serving.rayserve.metrics_hub import MetricsHub
from serving.rayserve.op_replica import OpReplica

#: Retry-After of Ray's own 503 past the ingress's ``max_queued_requests``, as our 503s give
BACKPRESSURE_RETRY_AFTER_S = 1.0


def backpressure_options() -> dict[str, Any]:
    """Retry-After on Ray's 503, set on the cluster's own Ray (not in ``serve.yaml``: Ray >= 2.58 only)."""
    try:
        from ray.serve.config import BackpressureConfig
    except ImportError:
        return {}
    return {"backpressure_config": BackpressureConfig(status_code=503, retry_after_s=BACKPRESSURE_RETRY_AFTER_S)}


def _deployment(cls: type) -> Any:
    """``serve.deployment`` of a class defined without the decorator (it stays importable and testable alone)."""
    return serve.deployment(cls)


def build_app(args: dict[str, Any]) -> Application:
    """The application of ``args = {"configs": [document, ...], "warmup": bool, "http_host": str,
    "num_cpus": {deployment: cpus}}`` (the last two absent in older files)."""
    documents = [dict(d) for d in args["configs"]]
    repo = parse_documents([ConfigDocument.from_dict(d) for d in documents])
    warmup = bool(args.get("warmup", True))
    options = deployment_options(repo, args.get("num_cpus"))
    hub = _deployment(MetricsHub).options(name=METRICS_HUB, **options[METRICS_HUB]).bind()
    ops = {
        name: _deployment(OpReplica)
        .options(name=name, **options[name])
        .bind(documents, config.name, config.effective_version, op.name, hub, warmup=warmup)
        for name, (config, op) in op_deployments(repo).items()
    }
    ingress = _deployment(Ingress).options(name=INGRESS, **options[INGRESS], **backpressure_options())
    return ingress.bind(documents, ops, hub, http_host=args.get("http_host"))


def serve_config(
    documents: list[ConfigDocument],
    *,
    host: str | None = None,
    port: int | None = None,
    warmup: bool = True,
    num_cpus: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A Ray Serve config file; its ``deployments`` repeat the configs' options, for Ray users to change."""
    repo = parse_documents(documents)
    conf = ray_conf(repo)
    deployments = [{"name": name, **opts} for name, opts in deployment_options(repo, num_cpus).items()]
    http_host = host or repo.host
    return {
        "proxy_location": "EveryNode",
        "http_options": {"host": http_host, "port": repo.http_port if port is None else port},
        "applications": [
            {
                "name": app_name(repo),
                "route_prefix": conf.route_prefix,
                "import_path": IMPORT_PATH,
                "args": {
                    "configs": [d.as_dict() for d in documents],
                    "warmup": warmup,
                    "http_host": http_host,
                    **({"num_cpus": dict(num_cpus)} if num_cpus else {}),
                },
                "logging_config": {"enable_access_log": conf.access_log},
                "deployments": deployments,
            }
        ],
    }
