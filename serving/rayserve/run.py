"""``batchline serve CONFIG --ray``: deploy the configs as a Ray Serve
application, on a cluster (``--address auto`` or ``ray://HOST:10001``) or on
a local one started for it, and keep it up until SIGTERM or SIGINT; then
delete the application (its replicas drain) and, if this command started
the cluster, stop it."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

import ray
from ray import serve
from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

from serving.config.documents import ConfigDocument, parse_documents
from serving.rayserve.app import build_app, serve_config
from serving.rayserve.deployments import app_name, ray_conf

log = logging.getLogger(__name__)


def deploy(
    documents: Sequence[ConfigDocument],
    *,
    host: str | None = None,
    port: int | None = None,
    warmup: bool = True,
) -> str:
    """Start Serve's proxies (if not running), deploy the application and wait
    until every replica is up and warm; returns the application's name."""
    repo = parse_documents(documents)
    config = serve_config(list(documents), host=host, port=port, warmup=warmup)
    if _serve_running():
        log.info(
            "Ray Serve already runs on this cluster: its HTTP proxies keep their host and port "
            "(Ray applies http_options only when Serve starts); asked for %s",
            config["http_options"],
        )
    serve.start(http_options=config["http_options"], proxy_location=config["proxy_location"])
    name = app_name(repo)
    application = config["applications"][0]
    app = build_app(application["args"])
    began = time.monotonic()
    serve.run(
        app,
        name=name,
        route_prefix=ray_conf(repo).route_prefix,
        logging_config=application["logging_config"],
        blocking=False,
    )
    log.info("application %s deployed in %.1fs", name, time.monotonic() - began)
    return name


def _serve_running() -> bool:
    try:
        ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    except ValueError:
        return False
    return True


def serve_on_ray(
    documents: Sequence[ConfigDocument],
    *,
    address: str | None,
    host: str | None = None,
    port: int | None = None,
    warmup: bool = True,
) -> int:
    started_here = address is None
    ray.init(address=address, log_to_driver=True, configure_logging=False)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):  # after ray.init, which installs its own
        signal.signal(sig, lambda signum, frame: stop.set())
    try:
        name = deploy(documents, host=host, port=port, warmup=warmup)
        http = serve_config(list(documents), host=host, port=port)["http_options"]
        log.info("serving on http://%s:%s/ (Ray Serve application %r)", http["host"], http["port"], name)
        stop.wait()
        log.info("stopping: deleting application %s (its replicas drain)", name)
        serve.delete(name)
        if started_here:
            serve.shutdown()
    finally:
        ray.shutdown()
    return 0


def serve_config_yaml(config: dict[str, Any], command: str) -> str:
    import yaml

    header = f"# Ray Serve config written by: {command}\n# deploy with: serve deploy <this file>\n"
    return header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
