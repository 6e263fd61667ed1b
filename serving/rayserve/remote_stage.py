"""An op that runs as a Ray Serve deployment, as the ingress's pipeline sees it. A call never
outlives its request, and is sent again (the op's ``retry``) when its replica died:
inference has no side effects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ray import exceptions as ray_errors
from ray.serve import exceptions as serve_errors

from serving.batching.channel import Join
from serving.batching.request import RequestState
from serving.errors import DeadlineExceeded, InternalError, Overloaded, ServingError
from serving.op import Op
from serving.rayserve.wire import OpCall, OpReply

log = logging.getLogger(__name__)

# the replica is gone or unreachable: the item was not done, sending it again is safe
REPLICA_LOST: tuple[type[BaseException], ...] = (
    ray_errors.RayActorError,
    ray_errors.ActorUnavailableError,
    ray_errors.WorkerCrashedError,
    ray_errors.NodeDiedError,
    ray_errors.ObjectLostError,
    serve_errors.ReplicaUnavailableError,
)
# Ray refuses the call (queue limit, nothing to route to): tell the client to come back
REFUSED: tuple[type[BaseException], ...] = (serve_errors.BackPressureError, serve_errors.DeploymentUnavailableError)

Send = Callable[[OpCall], Awaitable[OpReply]]

T = TypeVar("T")


class LoopThread:
    """An event loop in a thread of its own, for plain threads that need to await Ray Serve responses."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> LoopThread:
        self._thread.start()
        return self

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop; callable from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(callback, *args)

    def stop(self, timeout: float = 5.0) -> None:
        if not self._thread.is_alive():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)


def call_error(exc: BaseException, op: str) -> ServingError:
    """The status a failed call gets once it is not retried."""
    if isinstance(exc, REPLICA_LOST):
        return Overloaded(f"op {op!r}: its replica was lost ({type(exc).__name__}); retry", retry_after=1.0)
    if isinstance(exc, REFUSED):
        return Overloaded(f"op {op!r} is at capacity on the cluster ({type(exc).__name__})", retry_after=1.0)
    return InternalError(f"op {op!r}: call failed: {type(exc).__name__}")


class RemoteStage:
    """Implements :class:`serving.batching.stage_api.Stage` for one op deployment."""

    def __init__(
        self,
        name: str,
        op: Op,
        send: Send,
        loop: LoopThread,
        *,
        input_ops: list[str],
        retry: int = 1,
        healthy: Callable[[], bool] = lambda: True,
    ):
        self.name = name
        self.op = op
        self._send = send
        self._loop = loop
        self._retry = retry
        self._healthy = healthy
        self._join = Join(self, input_ops or ["input"])

    @property
    def healthy(self) -> bool:
        return self._healthy()

    @property
    def broken(self) -> bool:
        """Never: Ray Serve replaces a replica that dies."""
        return False

    def accept(self, source: str, request: RequestState, output: Any) -> None:
        self._join.deliver(source, request, output)

    def put(self, request: RequestState, inputs: dict[str, Any]) -> None:
        """A request's complete inputs (from the join): call the deployment."""
        if not request.done:
            self._loop.submit(self._run(request, inputs))

    async def _run(self, request: RequestState, inputs: dict[str, Any]) -> None:
        task = asyncio.current_task()
        assert task is not None
        # the request may end first (deadline, disconnect): stop waiting, and Ray cancels the call
        request.add_done_callback(lambda _: self._loop.call_soon(task.cancel))
        try:
            reply = await self._call_with_retry(request, inputs)
        except asyncio.CancelledError:
            return
        except ServingError as err:
            request.fail(err)
            return
        for timing in reply.timeline:
            request.add_timing(timing)
        try:
            reply.raise_error()
        except ServingError as err:
            request.fail(err)
            return
        request.owner.on_output(self, request, reply.output)

    async def _call_with_retry(self, request: RequestState, inputs: dict[str, Any]) -> OpReply:
        attempt = 0
        while True:
            remaining = request.remaining()
            if remaining <= 0:
                raise DeadlineExceeded(f"deadline passed before op {self.name!r}")
            call = OpCall(
                inputs, remaining, priority=request.priority, background=request.background, logid=request.logid
            )
            try:
                return await asyncio.wait_for(self._send(call), remaining)
            except asyncio.TimeoutError:
                raise DeadlineExceeded(f"deadline passed while op {self.name!r} ran on the cluster") from None
            except asyncio.CancelledError:
                raise
            except REPLICA_LOST as exc:
                if attempt >= self._retry:
                    raise call_error(exc, self.name) from None
                attempt += 1
                log.warning("op %s: replica lost (%s); sending request %s again", self.name, exc, request.id)
            except Exception as exc:  # noqa: BLE001 - every failure gets its status
                err = call_error(exc, self.name)
                if err.status >= 500 and not isinstance(err, Overloaded):
                    log.error("op %s: call for request %s failed", self.name, request.id, exc_info=exc)
                raise err from None
