"""The Ray backend without Ray: config documents built in the test, op
replicas (:class:`serving.rayserve.op_replica.OpReplica`, the real replica
body) running in this process, and fake deployment handles that call them as
a ``DeploymentHandle`` would (``handle.run.remote(call)``: an awaitable
response with ``cancel()``; calls and replies cross a cloudpickle round trip,
as they cross process boundaries on a cluster).

    documents = [document("p", split_add())]
    with FakeCluster(documents) as cluster:
        ingress = Ingress([d.as_dict() for d in documents], cluster.handles, status=cluster.status, app="test")

Ops are the model-free fakes of :mod:`tests.support.engine_fakes`, plus
:class:`GateOp`, whose predictor holds each batch until the test opens its
gate, so a test knows where an item is (running, or queued behind it)
without sleeping.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from ray import cloudpickle

from serving.config.documents import ConfigDocument, parse_documents
from serving.rayserve.deployments import op_deployments
from serving.rayserve.op_replica import OpReplica
from serving.rayserve.wire import OpCall, OpReply
from tests.support.engine_fakes import EchoTextOp, FakeParams, FakeRunner, op_conf

RAY_FAKES = "tests.support.ray_fakes"
HANG_GUARD_S = 60.0  # every wait in these fakes: generous, so a loaded machine is slow, not failing


# ----------------------------------------------------------------------------- configs


def split_add(**svc: Any) -> dict[str, Any]:
    """``split`` (TextSplitOp: "id n" -> n values, doubled) -> ``add`` (AddOp: doubled again)."""
    return {"split": op_conf("TextSplitOp", **svc), "add": op_conf("AddOp", ["split"], **svc)}


def four_times(rid: int, n: int) -> dict[str, Any]:
    """What :func:`split_add` answers for the text ``f"{rid} {n}"``."""
    return {"id": rid, "values": [400 * rid + 4 * j for j in range(n)]}


def document(name: str, ops: dict[str, Any], **top: Any) -> ConfigDocument:
    """A config file's data as ``batchline ray build`` ships it (the path need not exist: fake ops load no model)."""
    data: dict[str, Any] = {"name": name, "dag": {"request_timeout_ms": 30000, "max_queue_size": 32}, "op": ops}
    data.update(top)
    return ConfigDocument(f"{name}.yml", f"/nonexistent/{name}.yml", data)


def as_dicts(documents: list[ConfigDocument]) -> list[dict[str, Any]]:
    """The documents as they travel in ``build_app``'s args."""
    return [d.as_dict() for d in documents]


# ----------------------------------------------------------------------------- a predictor the test holds


class Gate:
    """Where a :class:`GateOp`'s batches wait: ``entered`` is set when a batch
    reached the predictor, ``go`` lets every batch through; ``seen`` holds the
    values of each batch run, in order."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()
        self.seen: list[list[float]] = []


GATES: dict[str, Gate] = {}


def gate(name: str) -> Gate:
    """A fresh gate under ``name`` (the ``gate`` param of a :class:`GateOp`)."""
    GATES[name] = Gate()
    return GATES[name]


class GateParams(FakeParams):
    gate: str


class _GateRunner(FakeRunner):
    def __init__(self, held: Gate):
        super().__init__(fail_when=lambda xs: -1.0 in xs)  # EchoTextOp's "boom"
        self.held = held

    def compute(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.held.seen.append([float(v) for v in feed["x"]])
        self.held.entered.set()
        if not self.held.go.wait(HANG_GUARD_S):
            raise RuntimeError("gate never opened")
        if self.fail_when(feed["x"].tolist()):
            raise RuntimeError("injected predictor failure")
        return [feed["x"] * 2]


class GateOp(EchoTextOp):
    """EchoTextOp (text -> {"text", "double_len"}) whose predictor holds every batch at its gate."""

    Params = GateParams

    def create_runners(self, count: int) -> list[FakeRunner]:
        self.runners = [_GateRunner(GATES[self.params.gate]) for _ in range(count)]
        return self.runners

    def warmup_items(self) -> list[Any]:
        return []


# ----------------------------------------------------------------------------- handles


def over_the_wire(value: Any) -> Any:
    """What arrives on the other side of a Ray call."""
    return cloudpickle.loads(cloudpickle.dumps(value))


class FakeResponse:
    """A ``DeploymentResponse``: the call starts at once, ``await`` gives its
    result, ``cancel()`` cancels it (awaiting alone does not: as with Ray, a
    caller that stops waiting must cancel the call itself)."""

    def __init__(self, call: Callable[[], Awaitable[Any]]):
        self._task: asyncio.Future[Any] = asyncio.ensure_future(call())
        self.cancelled = False

    def __await__(self) -> Any:
        return asyncio.shield(self._task).__await__()

    def cancel(self) -> None:
        self.cancelled = True
        self._task.cancel()


class _Method:
    def __init__(self, handle: FakeHandle):
        self._handle = handle

    def remote(self, call: OpCall) -> FakeResponse:
        handle = self._handle
        response = FakeResponse(lambda: handle.invoke(call))
        handle.responses.append(response)
        return response


class FakeHandle:
    """A ``DeploymentHandle`` of an op deployment whose one replica is ``replica``
    (an :class:`OpReplica`, or anything with ``async run(call) -> OpReply``)."""

    def __init__(self, replica: Any):
        self.replica = replica
        self.calls: list[OpCall] = []
        self.responses: list[FakeResponse] = []
        self.run = _Method(self)

    async def invoke(self, call: OpCall) -> OpReply:
        """One call of the replica's ``run``, as Ray delivers it (also a ``send`` for a RemoteStage)."""
        self.calls.append(call)
        reply = await self.replica.run(over_the_wire(call))
        return over_the_wire(reply)


def serve_status(app: str, running: dict[str, int]) -> Any:
    """A ``serve.status()`` answer: ``running[name]`` RUNNING replicas per deployment of ``app``."""
    deployments = {name: SimpleNamespace(replica_states={"RUNNING": n} if n else {}) for name, n in running.items()}
    return SimpleNamespace(applications={app: SimpleNamespace(deployments=deployments)})


class FakeCluster:
    """An :class:`OpReplica` (no warm-up, no metrics hub) per op deployment of
    ``documents``, a :class:`FakeHandle` to each, and a ``serve.status()``
    whose replica counts the test sets (``running``; default: one each)."""

    def __init__(self, documents: list[ConfigDocument], app: str = "test"):
        self.app = app
        repo = parse_documents(documents)
        dicts = as_dicts(documents)
        self.replicas: dict[str, OpReplica] = {}
        try:
            for name, (config, op) in op_deployments(repo).items():
                self.replicas[name] = OpReplica(
                    dicts, config.name, config.effective_version, op.name, None, warmup=False
                )
        except BaseException:
            self.close()
            raise
        self.handles = {name: FakeHandle(replica) for name, replica in self.replicas.items()}
        self.running = dict.fromkeys(self.replicas, 1)

    def status(self) -> Any:
        return serve_status(self.app, self.running)

    def close(self) -> None:
        for replica in self.replicas.values():
            replica.__del__()
        self.replicas = {}

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
