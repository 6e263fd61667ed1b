"""A front process's stand-in for the engine's :class:`PipelineRepository`: what the
routes read of a pipeline is answered from the config the engine sent; admission,
submission, health, listing, reload and metrics go over the link to the engine."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from serving.batching.live_pipelines import Key, ReloadReport, find_pipeline
from serving.batching.pipeline import time_limit_s
from serving.batching.request import RequestState
from serving.config.file_set import RepositoryConfig
from serving.config.schema import ServingConfig
from serving.errors import Overloaded, ServingError, ShuttingDown
from serving.http.front_processes import link as msg
from serving.http.front_processes.link import FrontSnapshot, Wire

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 10.0  # a call other than reload the engine has not answered by then gets 503


class PipelineView:
    """A pipeline as the routes see it: its name, version and config."""

    def __init__(self, config: ServingConfig):
        self.config = config
        self.name = config.name
        self.version = config.effective_version
        self._input_kind = config.input_kind  # worked out once: the routes ask per request

    def input_kind(self) -> str | None:
        return self._input_kind

    def time_limit_s(self, timeout_ms: int | None = None) -> float:
        return time_limit_s(self.config, timeout_ms)

    def op_table(self) -> list[dict[str, Any]]:
        return self.config.op_table()


@dataclass(frozen=True)
class GenerationView:
    number: int
    config: RepositoryConfig
    pipelines: dict[Key, PipelineView]


@dataclass(frozen=True)
class VersionTaken:
    """The ``owner`` of a remote request: the version the engine routed it to."""

    version: int | None


class RemoteRequest(RequestState):
    """One submitted value, completed by the engine's answer. Failing it here
    (client gone, deadline) also tells the engine, which stops computing it."""

    def __init__(self, repository: RemoteRepository, rid: int, index: int, *, deadline: float, logid: Any):
        super().__init__(rid, None, deadline=deadline, logid=logid)
        self._repository = repository
        self._index = index

    def fail(self, error: ServingError) -> bool:
        if not super().fail(error):
            return False
        self._repository.cancel(self.id, self._index, error)
        return True

    def drop(self, error: ServingError) -> None:
        """Fail it without telling the engine (which refused it, or is gone)."""
        super().fail(error)

    def settle(self, ok: bool, outcome: Any, version: int | None, timing: tuple[Any, float, float | None]) -> None:
        """The engine's answer (a later one than a local failure changes nothing)."""
        self.owner = VersionTaken(version)
        self.timeline, self.created, finished = timing
        self._complete(outcome if ok else None, None if ok else outcome)
        if finished is not None and self.finished_at is not None:
            self.finished_at = finished  # the engine's moment: the timing summary's total


class _Call:
    """A call (or a submission's admission) waiting for the engine's answer."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.ok = False
        self.value: Any = None

    def answer(self, ok: bool, value: Any) -> None:
        self.ok, self.value = ok, value
        self.event.set()

    def outcome(self, timeout: float | None, what: str) -> Any:
        if not self.event.wait(timeout):
            raise Overloaded(f"the engine process did not answer {what} within {timeout:.0f} s", retry_after=1.0)
        if not self.ok:
            raise self.value
        return self.value


class _Metrics:
    def __init__(self, repository: RemoteRepository):
        self._repository = repository

    def render(self) -> bytes:
        value: bytes = self._repository.call("metrics")
        return value


class RemoteRepository:
    """The engine's repository, seen from a front process through ``wire``.
    :meth:`serve` reads the engine's messages until the link ends, then calls ``on_lost``."""

    def __init__(self, wire: Wire, snapshot: FrontSnapshot, *, clock: Callable[[], float] = time.monotonic):
        self._wire = wire
        self._clock = clock
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._requests: dict[int, list[RemoteRequest]] = {}
        self._waiting: dict[int, _Call] = {}
        self._listeners: list[Callable[[], None]] = []
        self._lost = False
        self._flush_soon = False  # a flush of what the loop queued is scheduled
        self._gen = _generation(snapshot)
        self.metrics = _Metrics(self)

    # ---- what the routes read ----------------------------------------------------------
    @property
    def config(self) -> RepositoryConfig:
        return self._gen.config

    @property
    def generation(self) -> GenerationView:
        return self._gen

    @property
    def ready(self) -> bool:
        return bool(self.call("ready"))

    @property
    def live(self) -> bool:
        return bool(self.call("live"))

    def pipeline(self, name: str, version: int | None = None) -> PipelineView:
        gen = self._gen
        return find_pipeline(gen.config, gen.pipelines, name, version)

    def listing(self) -> dict[str, Any]:
        value: dict[str, Any] = self.call("listing")
        return value

    def reload(self) -> ReloadReport:
        report: ReloadReport = self.call("reload", timeout=None)
        return report

    def on_reload(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` now and after each reload the engine reports."""
        self._listeners.append(callback)
        callback()

    # ---- requests ----------------------------------------------------------------------
    def precheck(self, name: str, count: int, *, version: int | None = None, **options: Any) -> None:
        """The engine's admission check, before anything is decoded; skipped for text, whose
        decoding costs nothing worth a round trip (``submit`` admits with the same checks)."""
        if self.pipeline(name, version).input_kind() == "text":
            return
        self.call("precheck", name, count, version=version, **options)

    def submit(
        self,
        name: str,
        values: Sequence[Any],
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
        logid: Any = None,
        **options: Any,
    ) -> list[RemoteRequest]:
        """Hand ``values`` to the engine; returns once it admitted them (or raises its refusal).
        One value is not waited for: a refusal fails its handle, which the wait raises alike."""
        deadline = self._clock() + self.pipeline(name, version).time_limit_s(timeout_ms)
        rid = next(self._ids)
        handles = [RemoteRequest(self, rid, i, deadline=deadline, logid=logid) for i in range(len(values))]
        admission = _Call() if len(handles) > 1 else None
        with self._lock:
            self._check_link()
            self._requests[rid] = handles
            if admission is not None:
                self._waiting[rid] = admission
        options.update(version=version, timeout_ms=timeout_ms, logid=logid)
        message = (msg.SUBMIT, rid, name, list(values), options)
        if admission is None:
            self._send(message, rid=rid, loop=asyncio._get_running_loop())
            return handles
        self._send(message, rid=rid)
        try:
            admission.outcome(CALL_TIMEOUT_S, "a submission")
        except ServingError:
            with self._lock:
                self._requests.pop(rid, None)
            raise
        return handles

    def cancel(self, rid: int, index: int, error: ServingError) -> None:
        with self._lock:
            if self._lost or rid not in self._requests:
                return
        self._send((msg.CANCEL, rid, index, error), quiet=True)

    def call(self, method: str, *args: Any, timeout: float | None = CALL_TIMEOUT_S, **kwargs: Any) -> Any:
        rid = next(self._ids)
        waiting = _Call()
        with self._lock:
            self._check_link()
            self._waiting[rid] = waiting
        self._send((msg.CALL, rid, method, args, kwargs), rid=rid)
        return waiting.outcome(timeout, method)

    def _check_link(self) -> None:
        if self._lost:
            raise ShuttingDown("the engine process is gone; this server is stopping")

    def _send(
        self,
        message: Any,
        *,
        rid: int | None = None,
        quiet: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """Send ``message``; if the link is gone, forget request ``rid`` and (unless
        ``quiet``) raise the 503 of a server that is stopping. On ``loop`` (the HTTP server's,
        a submission nothing waits on) it leaves with the others of this loop pass, in one
        frame: a link gone by then ends in :meth:`_lose_link`, which fails them."""
        try:
            if loop is None:
                self._wire.send(message)
            else:
                self._wire.send(message, later=True)
                if not self._flush_soon:
                    self._flush_soon = True
                    loop.call_soon(self._flush)
        except OSError:
            if rid is not None:
                with self._lock:
                    self._requests.pop(rid, None)
                    self._waiting.pop(rid, None)
            if not quiet:
                raise ShuttingDown("the engine process is gone; this server is stopping") from None

    def _flush(self) -> None:
        self._flush_soon = False
        try:
            self._wire.flush()
        except OSError:
            pass  # the link is gone: serve() sees it too and fails what was sent

    # ---- the engine's messages ----------------------------------------------------------
    def serve(self, on_lost: Callable[[], None]) -> None:
        """Read the engine's messages until the link ends (the engine stopped or died)."""
        try:
            while True:
                for message in self._wire.recv():
                    self._receive(message)
        except (EOFError, OSError):
            pass
        finally:
            self._lose_link()
            on_lost()

    def _receive(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == msg.DONE:
            _, rid, index, ok, outcome, version, timing = message
            with self._lock:
                handles = self._requests.get(rid)
            if handles is None:
                return
            handles[index].settle(ok, outcome, version, timing)
            if all(h.done for h in handles):
                with self._lock:
                    self._requests.pop(rid, None)
        elif kind == msg.REFUSED:  # nothing was admitted: every value fails, a waiting submit raises
            with self._lock:
                handles = self._requests.pop(message[1], [])
                waiting = self._waiting.pop(message[1], None)
            for handle in handles:
                handle.drop(message[2])
            if waiting is not None:
                waiting.answer(False, message[2])
        elif kind in (msg.ADMITTED, msg.REPLY):
            with self._lock:
                waiting = self._waiting.pop(message[1], None)
            if waiting is not None and kind == msg.ADMITTED:
                waiting.answer(True, None)
            elif waiting is not None:
                waiting.answer(message[2], message[3])
        elif kind == msg.GENERATION:
            self._gen = _generation(message[1])
            for listener in list(self._listeners):
                listener()

    def _lose_link(self) -> None:
        with self._lock:
            self._lost = True
            requests, self._requests = self._requests, {}
            waiting, self._waiting = self._waiting, {}
        gone = ShuttingDown("the engine process is gone; this server is stopping")
        for call in waiting.values():
            call.answer(False, gone)
        for handles in requests.values():
            for handle in handles:
                handle.drop(gone)


def _generation(snapshot: FrontSnapshot) -> GenerationView:
    views = {(p.name, p.effective_version): PipelineView(p) for p in snapshot.config.pipelines}
    return GenerationView(snapshot.generation, snapshot.config, views)
