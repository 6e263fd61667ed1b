"""``batchline serve CONFIG --ray``: deploy the configs as a Ray Serve application and keep it
up until SIGTERM or SIGINT; then delete it and stop what this command started. A thread
deploys, so the main thread only waits for a signal.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray
from ray import exceptions as ray_errors
from ray import serve
from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

from serving.config.documents import ConfigDocument, parse_documents
from serving.rayserve import direct_ingress, own_processes
from serving.rayserve.app import build_app, serve_config
from serving.rayserve.deployments import app_name, ray_conf
from serving.rayserve.ingress import RELOAD_ON_RAY
from serving.rayserve.room import NoRoom, cpu_asks, fit_cpus, fitted_note, initial_replicas

log = logging.getLogger(__name__)


def deploy(
    documents: Sequence[ConfigDocument],
    *,
    host: str | None = None,
    port: int | None = None,
    warmup: bool = True,
    num_cpus: dict[str, float] | None = None,
) -> str:
    """Start Serve's proxies and submit the application, not waiting for its replicas; its name."""
    repo = parse_documents(documents)
    config = serve_config(list(documents), host=host, port=port, warmup=warmup, num_cpus=num_cpus)
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
    target = serve.RunTarget(
        target=build_app(application["args"]),
        name=name,
        route_prefix=ray_conf(repo).route_prefix,
        logging_config=application["logging_config"],
    )
    # not waiting: Ray's own wait cannot be interrupted, and never ends while a replica has no room
    serve.run_many([target], wait_for_ingress_deployment_creation=False, wait_for_applications_running=False)
    log.info("application %s submitted", name)
    return name


def watch(
    name: str,
    stop: threading.Event,
    *,
    status: Callable[[], Any] = serve.status,
    interval_s: float = 1.0,
    report_every_s: float = 30.0,
) -> bool | None:
    """Follow the application until it runs (True), fails to deploy (False, logged) or ``stop`` is set
    (None); while it deploys, say every ``report_every_s`` which deployments wait, and why."""
    began = last = time.monotonic()
    while not stop.wait(interval_s):
        try:
            app = status().applications.get(name)
        except Exception as exc:  # noqa: BLE001 - the controller may be starting or restarting
            log.debug("serve.status() failed: %s", exc)
            continue
        if app is None:
            continue
        state = _value(app.status)
        if state == "RUNNING":
            log.info(
                "application %s is running: every replica is up, %.1fs after it was submitted",
                name,
                time.monotonic() - began,
            )
            return True
        if state == "DEPLOY_FAILED":
            log.error("application %s failed to deploy: %s", name, app.message or _waiting(app))
            return False
        if time.monotonic() - last >= report_every_s:
            last = time.monotonic()
            log.warning(
                "application %s still deploying after %.0fs (/health/ready answers 503 until it runs): %s",
                name,
                time.monotonic() - began,
                _waiting(app),
            )
    return None


def _value(state: Any) -> str:
    return str(getattr(state, "value", state))


def _waiting(app: Any) -> str:
    """The deployments that are not running yet, with Serve's message for each (e.g. the resources it waits for)."""
    parts = []
    for deployment, info in app.deployments.items():
        if _value(info.status) == "HEALTHY":
            continue
        message = " ".join((info.message or "").split())
        parts.append(f"{deployment} {_value(info.status)}" + (f" ({message})" if message else ""))
    return "; ".join(parts) or "no deployment reported yet"


def local_cpus() -> int:
    """The CPUs a local Ray cluster would find on this machine (its cgroup's limit counts)."""
    try:
        from ray._private.utils import get_num_cpus

        return int(get_num_cpus())
    except (ImportError, AttributeError):  # a Ray without that helper: the CPUs this process may use
        return len(os.sched_getaffinity(0))


def fitted_cpus(documents: Sequence[ConfigDocument], supply: int) -> dict[str, float]:
    """``num_cpus`` overrides that fit the deployments on ``supply`` CPUs (logged when any); NoRoom otherwise."""
    asks = cpu_asks(parse_documents(documents))
    fitted = fit_cpus(asks, supply)
    if fitted:
        log.info("%s", fitted_note(asks, fitted, supply))
    return fitted


def _connect(address: str | None, attempts: int = 3, num_cpus: int | None = None) -> None:
    """``ray.init``, tried again through Ray Client: its per-client server can be slow to come up."""
    # "local": a new cluster, never one `ray start` left on this machine (ray.init(None) would join that)
    target = "local" if address is None else address
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=target, num_cpus=num_cpus, log_to_driver=True, configure_logging=False)
            return
        except ConnectionError as exc:
            if attempt == attempts or not (address or "").startswith("ray://"):
                raise
            log.warning("connecting to %s failed (%s); trying again", address, str(exc).splitlines()[0])
            time.sleep(2.0)


def _start_proxies(config: dict[str, Any], attempts: int = 3) -> None:
    """``serve.start``, tried again: on a loaded machine a new proxy can be found unhealthy and replaced."""
    for attempt in range(1, attempts + 1):
        try:
            serve.start(http_options=config["http_options"], proxy_location=config["proxy_location"])
            return
        except (ray_errors.RayActorError, ray_errors.GetTimeoutError) as exc:
            if attempt == attempts:
                raise
            log.warning("Ray Serve's HTTP proxies did not start (%s); trying again", type(exc).__name__)


def _check_room(deployments: list[dict[str, Any]]) -> None:
    """Warn when the cluster has fewer CPUs or GPUs than the replicas ask for: deploying would wait."""
    have = ray.cluster_resources()
    for resource, key in (("CPU", "num_cpus"), ("GPU", "num_gpus")):
        asked = sum(initial_replicas(d) * float(d["ray_actor_options"].get(key, 0.0)) for d in deployments)
        if asked > have.get(resource, 0.0):
            log.warning(
                "the application's replicas ask for %g %s, the cluster has %g: Ray will wait for room "
                "(or for its autoscaler) before every replica runs, and /health/ready answers 503 (or, while "
                "the ingress has no replica, Ray's proxy holds requests); lower "
                "op.<name>.ray.ray_actor_options.%s or the replicas, or add nodes",
                asked,
                resource,
                have.get(resource, 0.0),
                key,
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
    """0 after a stop by signal, 1 when deploying failed, 2 when the CPUs cannot fit a local cluster."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    started_here = address is None
    num_cpus: dict[str, float] = {}
    supply = None
    if started_here:
        supply = local_cpus()
        try:
            num_cpus = fitted_cpus(documents, supply)
        except NoRoom as exc:
            log.error("%s", exc)
            return 2
    repo = parse_documents(documents)
    direct = ray_conf(repo).direct_ingress
    if direct and started_here:
        os.environ.update(direct_ingress.ENV)  # read by every process of the cluster started below
    elif direct:
        log.warning(
            "ray.direct_ingress: on a running cluster, only if its nodes were started with %s",
            direct_ingress.node_env(),
        )
    stop = threading.Event()
    _on_signals(stop)  # a signal while Ray starts: stop once it has
    try:
        _connect(address, num_cpus=supply)
        _on_signals(stop)  # again: ray.init installs its own
        config = serve_config(list(documents), host=host, port=port, warmup=warmup, num_cpus=num_cpus)
        name = app_name(repo)
        outcome: list[bool | None] = []

        def deploy_and_watch() -> None:
            try:
                deploy(documents, host=host, port=port, warmup=warmup, num_cpus=num_cpus)
                http = config["http_options"]
                log.info("serving on http://%s:%s/ (Ray Serve application %r)", http["host"], http["port"], name)
                outcome.append(watch(name, stop))
                if direct and outcome[-1]:
                    _report_direct(name, http["host"], int(http["port"]))
            except Exception:
                log.exception("deploying application %s failed", name)
                outcome.append(False)
            if outcome[-1] is False:
                stop.set()

        deployer = threading.Thread(target=deploy_and_watch, name="deploy", daemon=True)
        if not stop.is_set():
            deployer.start()
        stop.wait()
        if deployer.is_alive():  # let a submission under way finish, so that the delete below sees it
            deployer.join(timeout=15.0)
        log.info("stopping: deleting application %s (its replicas drain)", name)
        drain_s = max(d.get("graceful_shutdown_timeout_s", 0.0) for d in config["applications"][0]["deployments"])
        _stop_application(name, shutdown_serve=started_here, timeout_s=drain_s + 30.0)
    finally:
        _disconnect(started_here)
    return 1 if outcome and outcome[-1] is False else 0


def _report_direct(name: str, host: str, proxy_port: int) -> None:
    """Log where the ingress replicas answer past the proxy (direct ingress)."""
    try:
        ports = direct_ingress.replica_ports(direct_ingress.target_groups(name), proxy_port)
    except Exception as exc:  # noqa: BLE001 - the proxy's address still serves
        log.warning("could not read the ingress replicas' direct ports: %s", exc)
        return
    if not ports:
        log.warning("ray.direct_ingress is set, but no ingress replica reports a port of its own")
        return
    addresses = ", ".join(f"http://{host}:{port}/" for port in ports)
    log.info("direct ingress: the ingress replicas also answer on %s (past Serve's proxy)", addresses)


def _on_signals(stop: threading.Event) -> None:
    def on_stop(signum: int, frame: Any) -> None:
        if stop.is_set():  # asked twice: do not wait for Ray any longer
            raise SystemExit(1)
        log.info("signal %d: stopping", signum)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_stop)
    # SIGHUP's default would end the command and leave the application deployed
    signal.signal(signal.SIGHUP, lambda signum, frame: log.warning("SIGHUP ignored: %s", RELOAD_ON_RAY))


def _disconnect(started_here: bool, timeout_s: float = 30.0) -> None:
    """``ray.shutdown``, bounded; then no process of a cluster started here outlives the command."""
    processes = own_processes.descendants() if started_here else {}
    _bounded(ray.shutdown, "ray.shutdown", timeout_s)
    own_processes.reap(processes, grace_s=10.0)


def _bounded(call: Callable[[], Any], what: str, timeout_s: float) -> bool:
    """Run ``call`` in a thread; False (logged) when it has not returned within ``timeout_s``."""
    finished = threading.Event()

    def run() -> None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - reported; the command still ends
            log.warning("%s failed: %s", what, exc)
        finally:
            finished.set()

    threading.Thread(target=run, name=what, daemon=True).start()
    if finished.wait(timeout_s):
        return True
    log.warning("%s did not return within %.0f s; going on", what, timeout_s)
    return False


def _stop_application(name: str, *, shutdown_serve: bool, timeout_s: float) -> None:
    """Delete the application (and Serve, if started here), bounded: after a Ctrl-C Ray may never answer."""

    def stop() -> None:
        serve.delete(name)
        if shutdown_serve:
            serve.shutdown()

    if not _bounded(stop, f"stopping application {name}", timeout_s):
        log.warning("Ray did not confirm that application %s stopped within %.0f s; exiting", name, timeout_s)


def serve_config_yaml(config: dict[str, Any], command: str, notes: Sequence[str] = ()) -> str:
    """The Ray Serve config file: a header naming ``command``, then ``notes`` as comments."""
    import yaml

    lines = [f"Ray Serve config written by: {command}", "deploy with: serve deploy <this file>", *notes]
    header = "".join(f"# {line}\n" for line in lines)
    return header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def build_notes(documents: Sequence[ConfigDocument]) -> list[str]:
    """What a Ray Serve config file cannot carry of ``documents`` and its deployer must do."""
    if not ray_conf(parse_documents(documents)).direct_ingress:
        return []
    return [f"ray.direct_ingress: start every node of the cluster with {direct_ingress.node_env()} (this file cannot)"]
