"""The engine's end of the front links: it submits what every front sends to the one
:class:`PipelineRepository`, so requests of all fronts batch together, sends each value's
outcome back as soon as it is known, answers the fronts' calls, and tells them of reloads."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Listener
from typing import Any

from serving.batching.live_pipelines import PipelineRepository
from serving.batching.request import RequestState
from serving.errors import ClientDisconnected, InternalError, ServingError, as_serving_error
from serving.http.front_processes import link as msg
from serving.http.front_processes.link import FrontHello, FrontSnapshot, Wire

log = logging.getLogger(__name__)


def snapshot_of(repository: PipelineRepository) -> FrontSnapshot:
    return FrontSnapshot(repository.generation.number, repository.config)


#: what a front may call of the repository (``msg.CALL``)
CALLS: dict[str, Callable[..., Any]] = {
    "precheck": PipelineRepository.precheck,
    "listing": PipelineRepository.listing,
    "ready": lambda repo: repo.ready,
    "live": lambda repo: repo.live,
    "reload": PipelineRepository.reload,
    "metrics": lambda repo: repo.metrics.render(),
}


class FrontHub:
    """Accepts front processes on ``address`` (a Unix socket path) with ``authkey``."""

    def __init__(
        self,
        repository: PipelineRepository,
        address: str,
        authkey: bytes,
        *,
        count: int,
        auth_token: str | None,
        admin_token: str | None,
    ):
        self.repository = repository
        self._listener = Listener(address, family="AF_UNIX", authkey=authkey)
        self._count = count
        self._tokens = (auth_token, admin_token)
        self._links: set[_FrontLink] = set()
        self._lock = threading.Lock()
        self._joined = threading.Condition(self._lock)
        self._closed = False
        repository.on_reload(self._broadcast)

    def start(self) -> None:
        threading.Thread(target=self._accept_loop, name="front-hub", daemon=True).start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError, AuthenticationError) as exc:
                if self._closed:
                    return
                log.warning("front link refused: %s", exc)  # a wrong key, or a peer gone mid-handshake
                continue
            link = _FrontLink(self, Wire(conn))
            threading.Thread(target=link.serve, name="front-link", daemon=True).start()

    def hello(self, link: _FrontLink, index: int) -> FrontHello:
        """Register ``link`` (the front numbered ``index``) and say what it serves."""
        with self._lock:
            self._links.add(link)
            snapshot = snapshot_of(self.repository)
            self._joined.notify_all()
        return FrontHello(snapshot, *self._tokens, index=index, count=self._count)

    def wait_linked(self, count: int, timeout: float) -> bool:
        """Whether ``count`` fronts are linked (each listens already) within ``timeout`` s."""
        with self._joined:
            return self._joined.wait_for(lambda: len(self._links) >= count, timeout)

    def forget(self, link: _FrontLink) -> None:
        with self._lock:
            self._links.discard(link)

    def _broadcast(self) -> None:
        """After a reload (and once now): every front switches to the new config."""
        with self._lock:
            links = list(self._links)
            snapshot = snapshot_of(self.repository)
        for link in links:
            link.send((msg.GENERATION, snapshot))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            links = list(self._links)
        self._listener.close()
        for link in links:
            link.wire.close()


class _FrontLink:
    """One front process's connection: its requests in flight and its calls."""

    def __init__(self, hub: FrontHub, wire: Wire):
        self.hub = hub
        self.repository = hub.repository
        self.wire = wire
        self._in_flight: dict[int, list[RequestState]] = {}
        self._lock = threading.Lock()

    def send(self, message: Any) -> None:
        try:
            self.wire.send(message)
        except OSError:
            pass  # the front is gone: its reader ends and forgets it

    def serve(self) -> None:
        try:
            ((index,),) = self.wire.recv()
            self.send(self.hub.hello(self, index))
            while True:
                for message in self.wire.recv():
                    kind = message[0]
                    if kind == msg.SUBMIT:
                        self._submit(*message[1:])
                    elif kind == msg.CANCEL:
                        self._cancel(*message[1:])
                    elif kind == msg.CALL:
                        self._call(*message[1:])
        except (EOFError, OSError):
            pass
        finally:  # also after a bug here: the front then sees its link end and restarts, never waits on it
            self.hub.forget(self)
            self.wire.close()
            self._abandon()

    def _submit(self, rid: int, name: str, values: list[Any], options: dict[str, Any]) -> None:
        try:
            handles = self.repository.submit(name, values, **options)
        except ServingError as err:
            self.send((msg.REFUSED, rid, err))
            return
        except Exception as exc:  # a bug: this request gets a 500, the link goes on
            log.exception("submitting a front's request failed")
            self.send((msg.REFUSED, rid, as_serving_error(exc)))
            return
        with self._lock:
            self._in_flight[rid] = handles
        if len(handles) > 1:  # a front waits for the admission of several values only
            self.send((msg.ADMITTED, rid))
        for index, handle in enumerate(handles):
            handle.add_done_callback(functools.partial(self._done, rid, index))

    def _done(self, rid: int, index: int, handle: RequestState) -> None:
        error = handle.error
        timing = (handle.timeline, handle.created, handle.finished_at)
        owner = getattr(handle.owner, "version", None)
        outcome = handle.outcome() if error is None else error
        try:
            self.wire.send((msg.DONE, rid, index, error is None, outcome, owner, timing))
        except OSError:
            pass
        except Exception as exc:  # an output pickle cannot carry
            log.exception("answer of request %s could not be passed to its front process", handle.id)
            failure = InternalError(f"the answer could not be passed to the front process: {type(exc).__name__}")
            self.send((msg.DONE, rid, index, False, failure, owner, timing))
        with self._lock:
            handles = self._in_flight.get(rid)
            if handles is not None and all(h.done for h in handles):
                del self._in_flight[rid]

    def _cancel(self, rid: int, index: int, error: ServingError) -> None:
        with self._lock:
            handles = self._in_flight.get(rid)
        if handles is not None and index < len(handles):
            handles[index].fail(error)

    def _call(self, rid: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if method == "reload":  # minutes: never on the reader, which must keep admitting
            threading.Thread(target=self._answer, args=(rid, method, args, kwargs), name="front-reload").start()
        else:
            self._answer(rid, method, args, kwargs)

    def _answer(self, rid: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            call = CALLS.get(method)
            if call is None:
                raise InternalError(f"unknown front call {method!r}")
            value = call(self.repository, *args, **kwargs)
        except ServingError as err:
            self.send((msg.REPLY, rid, False, err))
            return
        except Exception as exc:
            log.exception("front call %s failed", method)
            self.send((msg.REPLY, rid, False, as_serving_error(exc)))
            return
        self.send((msg.REPLY, rid, True, value))

    def _abandon(self) -> None:
        """The front is gone: nothing it submitted can be answered, so nothing more is computed for it."""
        with self._lock:
            in_flight, self._in_flight = self._in_flight, {}
        gone = ClientDisconnected("the front process holding this request is gone")
        for handles in in_flight.values():
            for handle in handles:
                handle.fail(gone)
