"""The HTTP ingress deployment: the same app, pipelines, admission and metrics as ``batchline
serve``, every op's stage a :class:`RemoteStage`; Ray bounds what a replica takes on, with our
settings (docs/DEPLOY.md, "Ray cluster"). Tokens come from the environment unless configured.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import Response

from serving.batching.launch import make_op
from serving.batching.live_pipelines import PipelineRepository
from serving.config.documents import ConfigDocument, parse_documents
from serving.config.schema import OpConfig, ServingConfig
from serving.http.app import create_app
from serving.http.early_refusals import FrontGate
from serving.rayserve.deployments import op_deployment_name, ray_conf
from serving.rayserve.ingress_gate import IngressGate
from serving.rayserve.metrics_hub import MetricsPusher, merge_texts
from serving.rayserve.remote_stage import LoopThread, RemoteStage, Send
from serving.rayserve.wire import OpCall, OpReply
from serving.rayserve.wsgi_bridge import app_path, call_wsgi
from serving.runners.heap_trim import HeapTrim
from serving.service.auth import admin_token, auth_token
from serving.service.core import decoded_values
from serving.service.decode import DecodePlan
from serving.service.exposure import check_bind
from serving.service.limits import http_threads

log = logging.getLogger(__name__)

RELOAD_ON_RAY = (
    "on Ray Serve, change the config and deploy it again (batchline ray build + serve deploy, or batchline serve --ray)"
)


def handle_sender(handle: Any) -> Send:
    """``send`` for a RemoteStage: one call of the deployment's ``run``; cancelling it cancels the Ray request."""

    async def send(call: OpCall) -> OpReply:
        response = handle.run.remote(call)
        try:
            return await response
        except asyncio.CancelledError:
            response.cancel()
            raise

    return send


def carried(plan: DecodePlan) -> list[Any]:
    """A checked request's values for the pipeline: images as their files, decoded by the op replica."""
    return [p if p.header is not None else p.value for p in plan.inputs]


def running_replicas(status: Any, app: str) -> dict[str, int]:
    """Deployment -> RUNNING replicas, from a ``serve.status()`` answer."""
    application = status.applications.get(app)
    if application is None:
        return {}
    counts = {}
    for name, deployment in application.deployments.items():
        states = {str(getattr(k, "value", k)): v for k, v in (deployment.replica_states or {}).items()}
        counts[name] = int(states.get("RUNNING", 0))
    return counts


class DeploymentHealth:
    """``running(name)``: whether the deployment had a running replica at the last poll (none
    before the first: the ops may still be loading when Serve routes to the ingress).
    :meth:`start` waits briefly for the first answer, so a ready application is ready at once."""

    def __init__(self, app: str, status: Callable[[], Any], interval_s: float = 1.0):
        self.app = app
        self._status = status
        self.interval_s = interval_s
        self._counts: dict[str, int] | None = None
        self._stop = threading.Event()
        self._polled = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="deployment-health", daemon=True)

    def start(self, first_poll_s: float = 2.0) -> DeploymentHealth:
        self._thread.start()
        self._polled.wait(first_poll_s)
        return self

    def poll(self) -> None:
        try:
            self._counts = running_replicas(self._status(), self.app)
        except Exception as exc:  # noqa: BLE001 - keep the last answer; the controller may be restarting
            log.debug("serve.status() failed: %s", exc)
        finally:
            self._polled.set()

    def _loop(self) -> None:
        while True:
            self.poll()
            if self._stop.wait(self.interval_s):
                return

    def running(self, deployment: str) -> bool:
        counts = self._counts
        return counts is not None and counts.get(deployment, 0) > 0

    def stop(self) -> None:
        self._stop.set()


class Ingress:
    """The body of the ingress deployment (``serving.rayserve.app`` makes it one)."""

    # images go to the op replicas as their files, decoded there (False: decoded here, as before; benches)
    images_travel_encoded = True

    def __init__(
        self,
        documents: list[dict[str, Any]],
        ops: Mapping[str, Any],
        hub: Any = None,
        *,
        status: Callable[[], Any] | None = None,
        app: str | None = None,
        http_host: str | None = None,
    ):
        repo_conf = parse_documents([ConfigDocument.from_dict(d) for d in documents])
        # resolved here, on the replica's node: the environment that counts is the cluster's
        gate = FrontGate(auth_token(repo_conf.auth_token), admin_token(repo_conf.admin_token))
        if http_host is not None:  # the proxies' bind address, as the Serve config gives it
            check_bind(http_host, token=gate.auth_token, insecure=repo_conf.security.insecure)
        self._loop = LoopThread("ray-op-calls").start()
        self._health = DeploymentHealth(app or serve.get_replica_context().app_name, status or serve.status).start()
        self._ops = ops

        def stage_source(config: ServingConfig, op: OpConfig) -> RemoteStage:
            name = op_deployment_name(config, op)
            return RemoteStage(
                name,
                make_op(op, op.share_name),
                handle_sender(ops[name]),
                self._loop,
                input_ops=op.input_ops,
                retry=op.retry,
                healthy=lambda: self._health.running(name),
            )

        self.repository = PipelineRepository(
            repo_conf, stage_source=stage_source, reload_refused=RELOAD_ON_RAY, warmup=False
        )
        self.repository.start()
        self._pusher = MetricsPusher(
            hub, f"ingress-{os.getpid()}", self.repository.metrics, ray_conf(repo_conf).metrics_interval_s
        )
        self._pusher.start()
        self.app = create_app(
            self.repository,
            auth_token=gate.auth_token,
            admin_token=gate.admin_token,
            metrics_text=self._metrics_text,
            values=carried if self.images_travel_encoded else decoded_values,
        )
        self._front = IngressGate(gate, lambda: self.app.body_limit or 0, repo_conf.http.max_buffered_mb)
        self._pool = ThreadPoolExecutor(http_threads(repo_conf), thread_name_prefix="http")
        self._heap = HeapTrim().start()  # bodies freed: their pages back to the system, as in one process

    async def __call__(self, request: Request) -> Response:
        admitted = await self._front.admit(request, app_path(request.scope))
        if isinstance(admitted, Response):
            return admitted
        # the body's claim goes back once the app is done with the body (answered, failed or abandoned)
        return await call_wsgi(self.app, request, admitted.body, self._pool, done=admitted.claim.release)

    def _metrics_text(self) -> bytes:
        """This replica's metrics, fresh, with every other replica's latest from the hub."""
        texts: dict[str, str] = {}
        if self._pusher.hub is not None:
            try:
                texts = self._pusher.hub.collect.remote().result(timeout_s=2.0)
            except Exception as exc:  # noqa: BLE001 - this replica's own metrics still answer
                log.warning("metrics hub unreachable: %s", exc)
        texts[self._pusher.replica] = self._pusher.text()
        return merge_texts(texts)

    def __del__(self) -> None:
        """Ray Serve's graceful shutdown (once: the collector calls it again after Ray did)."""
        repository = getattr(self, "repository", None)
        if repository is None or getattr(self, "_stopped", False):
            return
        self._stopped = True
        repository.shutdown()
        self._pusher.stop()
        self._health.stop()
        self._loop.stop()
        self._pool.shutdown(wait=False)
        heap = getattr(self, "_heap", None)  # a replica whose construction failed part way has none
        if heap is not None:
            heap.stop()
