"""One replica of an op's deployment: our own op stage behind an async ``run``, batching the
items of every call it holds, from any ingress replica.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from typing import Any

from serving.batching.launch import launch as launch_stage
from serving.batching.launch import make_op
from serving.batching.metrics import SHARED, Metrics
from serving.batching.request import RequestState
from serving.batching.stage import OpStage
from serving.config.documents import ConfigDocument, parse_documents
from serving.errors import ClientDisconnected, ServingError, as_serving_error
from serving.op import Op
from serving.rayserve.metrics_hub import MetricsPusher
from serving.rayserve.wire import OpCall, OpReply
from serving.runners.node_cpus import NodeCpuAllocator
from serving.service.decode import PendingInput

log = logging.getLogger(__name__)


class OpReplica:
    """The body of an op deployment (``serving.rayserve.app`` makes it one)."""

    def __init__(
        self,
        documents: list[dict[str, Any]],
        pipeline: str,
        version: int,
        op: str,
        hub: Any = None,
        *,
        warmup: bool = True,
    ):
        repo = parse_documents([ConfigDocument.from_dict(d) for d in documents])
        config = repo.pipeline(pipeline, version)
        op_conf = config.op[op]
        share = op_conf.share_name
        labels = (SHARED, "") if share else (config.name, str(config.effective_version))
        self.metrics = Metrics()
        self.clock = time.monotonic
        self.stage = OpStage(
            make_op(op_conf, share),
            metrics=self.metrics,
            deliver=_finish,
            channel_size=config.dag.channel_size,
            priority_levels=config.dag.priority_levels,
            priority_max_wait_s=config.dag.priority_max_wait_ms / 1000.0,
            labels=labels,
        )
        self._ids = itertools.count(1)
        # the classes of the ops this op's output goes to (a shared op's differ by pipeline: none then)
        consumers = [] if share else [c.op_class for c in config.ops if op in c.input_ops]
        self._consumers: tuple[type[Op], ...] = () if None in consumers else tuple(filter(None, consumers))
        # replicas of one machine pin OpenVINO instances to different cores
        self._cpus = NodeCpuAllocator()
        self._cpu_sets = launch_stage(self.stage, self._cpus, warmup=warmup)
        # where this replica's instances run (gpu:N counts the GPUs Ray gave the replica)
        self.metrics.instance_devices.read_from(lambda: [(self.stage.labels, self.stage.devices)])
        replica = f"{self.stage.name}-{os.getpid()}"
        self._pusher = MetricsPusher(hub, replica, self.metrics, config.ray.metrics_interval_s)
        self._pusher.start()

    async def run(self, call: OpCall) -> OpReply:
        """One request through this op: its output, or its error with a status."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        request = RequestState(
            next(self._ids),
            None,
            deadline=self.clock() + call.timeout_s,
            priority=call.priority,
            logid=call.logid,
            background=call.background,
        )
        request.add_done_callback(lambda _: _settle_from_thread(loop, done))
        try:
            # a full channel blocks the caller (backpressure): not on the event loop
            await asyncio.to_thread(self._accept, request, call.inputs)
            await done
        except asyncio.CancelledError:  # the caller gave up: the batcher drops the items
            request.fail(ClientDisconnected("the ingress cancelled the call"))
            raise
        try:
            output = self._outgoing(request.outcome())
        except ServingError as err:
            return OpReply.failed(err, request.timeline)
        return OpReply(output=output, timeline=list(request.timeline))

    def _outgoing(self, output: Any) -> Any:
        """The output as it crosses to the ingress: without what none of its consumers reads."""
        if not self._consumers:
            return output
        try:
            return self.stage.op.output_for(output, self._consumers)
        except Exception as exc:  # noqa: BLE001 - the op's failure: the request gets the status
            raise as_serving_error(exc) from exc

    def _accept(self, request: RequestState, inputs: dict[str, Any]) -> None:
        try:
            for source, value in inputs.items():
                # an image travels as its checked file: decoded here, with the server's own call
                if source == "input" and isinstance(value, PendingInput):
                    value = value.decode()
                self.stage.accept(source, request, value)
        except Exception as exc:  # noqa: BLE001 - e.g. the stage is closing: the request gets the status
            request.fail(as_serving_error(exc))

    def check_health(self) -> None:
        """Ray Serve's health check (a single server's ``/health/live``): failing, the replica is replaced."""
        if self.stage.channel.closed:
            raise RuntimeError(f"op {self.stage.name}: stage stopped")
        if self.stage.broken:
            raise RuntimeError(f"op {self.stage.name}: no predictor instance could be restarted")

    def __del__(self) -> None:
        """Ray Serve's graceful shutdown (once: the collector calls it again after Ray did)."""
        stage = getattr(self, "stage", None)
        if stage is None or getattr(self, "_stopped", False):
            return
        self._stopped = True
        self._pusher.stop()
        stage.stop(timeout=10.0)
        self._cpus.release(self._cpu_sets)


def _finish(request: RequestState, output: Any) -> None:
    request.finish(output)


def _settle_from_thread(loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> None:
    loop.call_soon_threadsafe(_settle, done)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
