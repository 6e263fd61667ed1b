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
from ray import exceptions as ray_errors
from ray import serve
from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

from serving.config.documents import ConfigDocument, parse_documents
from serving.rayserve.app import build_app, serve_config
from serving.rayserve.deployments import app_name, ray_conf
from serving.rayserve.ingress import RELOAD_ON_RAY

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
    _check_room(config["applications"][0]["deployments"])
    _start_proxies(config)
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


def _connect(address: str | None, attempts: int = 3) -> None:
    """``ray.init``; through Ray Client (``ray://``) tried again: the cluster starts a server
    for each client, which can fail to come up in time on a loaded head node."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, log_to_driver=True, configure_logging=False)
            return
        except ConnectionError as exc:
            if attempt == attempts or not (address or "").startswith("ray://"):
                raise
            log.warning("connecting to %s failed (%s); trying again", address, str(exc).splitlines()[0])
            time.sleep(2.0)


def _start_proxies(config: dict[str, Any], attempts: int = 3) -> None:
    """``serve.start``, tried again when a proxy dies while starting: on a loaded machine
    Serve's controller can find a new proxy unhealthy, replace it, and the start fails."""
    for attempt in range(1, attempts + 1):
        try:
            serve.start(http_options=config["http_options"], proxy_location=config["proxy_location"])
            return
        except (ray_errors.RayActorError, ray_errors.GetTimeoutError) as exc:
            if attempt == attempts:
                raise
            log.warning("Ray Serve's HTTP proxies did not start (%s); trying again", type(exc).__name__)


def _check_room(deployments: list[dict[str, Any]]) -> None:
    """Warn when the cluster has fewer CPUs or GPUs than the replicas ask for: Ray then
    waits (for its autoscaler, if any, to add nodes) and deploying does not finish."""
    have = ray.cluster_resources()
    for resource, key in (("CPU", "num_cpus"), ("GPU", "num_gpus")):
        asked = 0.0
        for d in deployments:
            scaling = d.get("autoscaling_config")
            if scaling is None:
                replicas = d.get("num_replicas", 1)
            else:
                initial = scaling.get("initial_replicas")
                replicas = scaling.get("min_replicas", 1) if initial is None else initial
            asked += replicas * float(d["ray_actor_options"].get(key, 0.0))
        if asked > have.get(resource, 0.0):
            log.warning(
                "the application's replicas ask for %g %s, the cluster has %g: Ray will wait for room "
                "(or for its autoscaler) before every replica runs; lower ray_actor_options or add nodes",
                asked,
                resource,
                have.get(resource, 0.0),
            )


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
    _connect(address)
    stop = threading.Event()

    def on_stop(signum: int, frame: Any) -> None:
        if stop.is_set():  # asked twice: do not wait for Ray any longer
            raise SystemExit(1)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):  # after ray.init, which installs its own
        signal.signal(sig, on_stop)
    # SIGHUP reloads the single-process server; here its default action would end the
    # command and leave the application deployed
    signal.signal(signal.SIGHUP, lambda signum, frame: log.warning("SIGHUP ignored: %s", RELOAD_ON_RAY))
    config = serve_config(list(documents), host=host, port=port, warmup=warmup)
    try:
        name = deploy(documents, host=host, port=port, warmup=warmup)
        http = config["http_options"]
        log.info("serving on http://%s:%s/ (Ray Serve application %r)", http["host"], http["port"], name)
        stop.wait()
        log.info("stopping: deleting application %s (its replicas drain)", name)
        drain_s = max(d.get("graceful_shutdown_timeout_s", 0.0) for d in config["applications"][0]["deployments"])
        _stop_application(name, shutdown_serve=started_here, timeout_s=drain_s + 30.0)
    finally:
        ray.shutdown()
    return 0


def _stop_application(name: str, *, shutdown_serve: bool, timeout_s: float) -> None:
    """Delete the application (replicas drain) and, for a cluster this command started, Serve;
    give up after ``timeout_s``: a Ctrl-C reaches the whole process group, and a local
    cluster's GCS and raylet may be gone already, when Ray would never answer."""
    finished = threading.Event()

    def run() -> None:
        try:
            serve.delete(name)
            if shutdown_serve:
                serve.shutdown()
        except Exception as exc:  # noqa: BLE001 - reported; the command still ends
            log.warning("stopping application %s failed: %s", name, exc)
        finally:
            finished.set()

    threading.Thread(target=run, name="stop-application", daemon=True).start()
    if not finished.wait(timeout_s):
        log.warning("Ray did not confirm that application %s stopped within %.0f s; exiting", name, timeout_s)


def serve_config_yaml(config: dict[str, Any], command: str) -> str:
    import yaml

    header = f"# Ray Serve config written by: {command}\n# deploy with: serve deploy <this file>\n"
    return header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
