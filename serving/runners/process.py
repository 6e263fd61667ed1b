"""A predictor in its own process (``instance_mode: process``), on any engine:
the server's thread waits on a pipe (GIL released) while the child computes,
and a native crash kills one child, not the server. Feeds and outputs travel
through shared memory; only a small JSON header crosses the pipe. With
``instance_mode: device_process`` the child is one instance thread of the
device's shared process instead (:mod:`serving.runners.device_hosts`).

A dead child fails the current run; unsupervised, the next run starts a fresh
one. Supervised (:mod:`serving.runners.process_supervisor`), a watcher restarts
it and a run that reaches it meanwhile waits until its batch's deadline, then
fails with 503. See docs/DESIGN_NOTES.md, "Supervised predictor processes".
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from serving.config.schema import LocalServiceConf
from serving.errors import DeadlineExceeded, InstanceRestarting
from serving.runners.cpu_plan import use_idle_cpu
from serving.runners.paddle_inference import check_feed
from serving.runners.placement import device_name
from serving.runners.process_memory import rss_bytes
from serving.runners.runner_modules import load_one
from serving.runners.shared_memory import (
    Segment,
    array_views,
    segment_prefix,
    sweep_stale,
    unlink_prefixed,
    write_arrays,
)

if TYPE_CHECKING:
    from serving.runners.device_hosts import DeviceHosts, Share

log = logging.getLogger(__name__)

#: how long past its batch's deadline a silent predictor process is given before it is killed as hung
HANG_GRACE_S = 1.0
#: how long a run waits for a restarting process when its batch has no deadline
RESTART_WAIT_S = 30.0


#: what the server sends a predictor (process or device-process instance) to make it stop
STOP_REQUEST = json.dumps({"op": "stop"}).encode()


def error_reply(exc: BaseException) -> dict[str, Any]:
    """What a predictor tells the server of a failure (to load, or to run a batch)."""
    return {"status": "error", "message": f"{type(exc).__name__}: {exc}"}


def log_as_the_server(level: int) -> None:
    """In a spawned child: log at the server's level to the stderr it inherited (a spawned
    interpreter starts with no handler, and would drop everything under WARNING)."""
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s")


def name_process(name: str) -> None:
    """Set the calling thread's name, which for the main thread is the process's, as
    ``ps``, ``top`` and /proc/<pid>/comm show it (Linux, 15 bytes; elsewhere nothing happens)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def stop_process(proc: Any, conn: Any, message: bytes, grace: float) -> None:
    """Ask ``proc`` to stop (``message`` on ``conn``), wait up to ``grace`` s, then kill it."""
    if grace > 0 and proc.is_alive():
        try:
            conn.send_bytes(message)
        except OSError:
            pass
        proc.join(grace)
    if proc.is_alive():
        proc.kill()
    proc.join(5)


#: builds one model instance on GPU ``device_id`` (None on CPU); picklable, since a
#: predictor process calls it (:meth:`serving.op.Op.model_factory`)
ModelFactory = Callable[[int | None], Any]


def _child_main(
    conn: Any,
    conf: LocalServiceConf,
    device_id: int | None,
    cpus: list[int] | None = None,
    idle_cpu: bool = False,
    out_prefix: str | None = None,
    label: str = "",
    factory: ModelFactory | None = None,
    log_level: int = logging.WARNING,
) -> None:
    """Child process: load the predictor, then serve run requests until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent drains, then stops us
    log_as_the_server(log_level)
    if label:
        name_process(f"bl-{label}")
    try:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if idle_cpu:
            use_idle_cpu()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send_bytes(json.dumps(error_reply(exc)).encode())
        return
    serve_instance(conn, lambda: factory(device_id) if factory is not None else load_one(conf, device_id), out_prefix)


def serve_instance(conn: Any, load: Callable[[], Any], out_prefix: str | None) -> None:
    """Load one predictor (``load()``), say so on ``conn`` (or why not), then serve its run
    requests until told to stop or the parent goes: the loop of a predictor process, or of
    one instance thread of a device process (:mod:`serving.runners.device_hosts`)."""
    try:
        predictor = load()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send_bytes(json.dumps(error_reply(exc)).encode())
        return
    conn.send_bytes(
        json.dumps({"status": "ready", "inputs": predictor.input_names, "outputs": predictor.output_names}).encode()
    )
    feed_segment, out_segment = Segment(), Segment(out_prefix)
    try:
        while True:
            try:
                request = json.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            if request.get("op") == "stop":
                return
            try:
                shm = feed_segment.attach(request["shm"])
                views = array_views(shm, request["inputs"])
                outputs = predictor.run({m["name"]: v for m, v in zip(request["inputs"], views)})
                del views
                meta = write_arrays(out_segment, [(str(i), o) for i, o in enumerate(outputs)])
                reply = {"status": "ok", "shm": out_segment.name, "outputs": meta}
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                reply = error_reply(exc)
            conn.send_bytes(json.dumps(reply).encode())
    finally:
        feed_segment.release(unlink=False)
        out_segment.release(unlink=True)
        try:
            predictor.close()  # in a device process the other instances go on: give its memory back
        except Exception:  # noqa: BLE001 - the instance is ending either way
            log.exception("closing a predictor failed")


class PredictorChild:
    """One predictor process as the server sees it: the process, its pipe, and
    the output segments it writes (``<out_prefix><random>``)."""

    def __init__(self, proc: Any, conn: Any, out_prefix: str):
        self.proc = proc
        self.conn = conn
        self.out_prefix = out_prefix
        self.out = Segment()  # the child's output segment, attached
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self.refused = False  # it said why it could not load its model, and is ending by itself

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def wait_ready(self, timeout: float, model_dir: str | None) -> None:
        """Block until the child has loaded its model (raises if it could not)."""
        if not self.conn.poll(timeout):
            raise RuntimeError(f"predictor process did not start within {timeout:.0f}s")
        try:
            hello = json.loads(self.conn.recv_bytes())
        except EOFError:
            self.proc.join(5)
            raise RuntimeError(
                f"predictor process failed to load the model: it exited with code {self.proc.exitcode} "
                f"(model dir {model_dir})"
            ) from None
        if hello["status"] != "ready":
            self.refused = True
            raise RuntimeError(f"predictor process failed to load the model: {hello['message']}")
        self.input_names, self.output_names = hello["inputs"], hello["outputs"]

    def run(self, feed_segment: Segment, feed: Mapping[str, np.ndarray], until: float | None) -> list[np.ndarray]:
        """One batch: feeds through ``feed_segment``, outputs copied out of the child's. Raises
        EOFError/OSError if the child died, :class:`_Hung` if silent past ``until`` (monotonic,
        + a grace), RuntimeError for the model's errors."""
        meta = write_arrays(feed_segment, [(n, feed[n]) for n in self.input_names])
        self.conn.send_bytes(json.dumps({"op": "run", "shm": feed_segment.name, "inputs": meta}).encode())
        if until is not None and not self.conn.poll(max(0.0, until - time.monotonic()) + HANG_GRACE_S):
            raise _Hung()
        reply = json.loads(self.conn.recv_bytes())
        if reply["status"] != "ok":
            raise RuntimeError(f"predictor process: {reply['message']}")
        shm = self.out.attach(reply["shm"])
        return [v.copy() for v in array_views(shm, reply["outputs"])]

    def end(self, grace: float = 0.0) -> int | None:
        """Stop the child (asked to, for ``grace`` s; then killed) and remove the output
        segments a dead child never unlinked. Returns its exit code (negative: the signal)."""
        stop_process(self.proc, self.conn, STOP_REQUEST, grace)
        self.release()
        return self.proc.exitcode

    def release(self) -> None:
        """Close the pipe and remove the output segments the child never unlinked."""
        self.conn.close()
        self.out.release(unlink=False)
        if unlink_prefixed(self.out_prefix):
            log.info("removed the output segments of a predictor process that did not clean up")


class _Hung(Exception):
    """The child gave no answer by its run's deadline (+ the grace)."""


class _ChildView:
    """A fresh child as a runner, for warming it before it takes the op's work."""

    def __init__(self, child: PredictorChild, feed_segment: Segment):
        self._child = child
        self._feed = feed_segment
        self.input_names = child.input_names
        self.output_names = child.output_names

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        check_feed(self.input_names, feed)
        return self._child.run(self._feed, feed, None)

    def close(self) -> None:
        pass


class ProcessPredictor:
    """A runner like the in-process ones (``input_names``, ``output_names``, ``run``); one batch at a time."""

    def __init__(
        self,
        conf: LocalServiceConf,
        device_id: int | None = None,
        *,
        start_timeout: float = 300.0,
        wait_ready: bool = True,
        cpus: list[int] | None = None,
        idle_cpu: bool = False,
        label: str = "",
        factory: ModelFactory | None = None,
        host: DeviceHosts | None = None,
        share: Share | None = None,
    ):
        self._conf = conf
        self._host = host  # the instance lives in the device process of its device (cpus: not used)
        self._share = share  # there, the instances it shares its weights with
        self.label = label  # the child is named bl-<label> in ps and top
        self._device_id = device_id
        self._factory = factory
        self.cpus = list(cpus) if cpus else None  # the child's CPU affinity (None: inherited)
        self.idle_cpu = idle_cpu  # the child runs in the idle CPU class
        self._start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        sweep_stale()
        self._prefix = segment_prefix()
        self._feed = Segment(self._prefix + "f")
        self._children = 0
        self.ready = threading.Event()  # a child is loaded and takes runs
        self.supervised = False  # a supervisor restarts a dead child; run() never does
        self.failed = False  # the supervisor gave up: this instance will not come back
        self.last_exitcode: int | None = None  # of the last child that ended (negative: killed by that signal)
        # the memory guard: a supervisor recycles a child whose RSS exceeds this (None: off)
        self.max_rss_bytes = None if conf.max_rss_mb is None else conf.max_rss_mb << 20
        # time.monotonic() by which the running batch must be answered (set by the stage); silent past it: hung
        self.run_deadline: float | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._child: PredictorChild | None = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self.device = "cpu" if conf.device_type == 0 else device_name(device_id or 0)
        self._child = self._spawn()
        if wait_ready:
            self.wait_ready()

    def _spawn(self) -> PredictorChild:
        self._children += 1
        out_prefix = f"{self._prefix}o{self._children}_"
        if self._host is not None:
            return self._host.attach(
                self._conf,
                self._device_id,
                out_prefix,
                idle_cpu=self.idle_cpu,
                factory=self._factory,
                label=self.label,
                share=self._share,
            )
        parent, child_end = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_child_main,
            args=(
                child_end,
                self._conf,
                self._device_id,
                self.cpus,
                self.idle_cpu,
                out_prefix,
                self.label,
                self._factory,
                logging.getLogger().getEffectiveLevel(),
            ),
            name="batchline-predictor",
            daemon=True,
        )
        proc.start()
        child_end.close()
        return PredictorChild(proc, parent, out_prefix)

    def _loaded(self, child: PredictorChild) -> PredictorChild:
        """``child`` once it has loaded its model; ended if it could not."""
        try:
            child.wait_ready(self._start_timeout, self._conf.model_config)
        except BaseException:
            self.last_exitcode = child.end()
            raise
        return child

    def wait_ready(self) -> None:
        """Block until the first child has loaded its model (raises if it could not)."""
        assert self._child is not None
        try:
            child = self._loaded(self._child)
        except BaseException:
            self._child = None
            raise
        self.input_names, self.output_names = child.input_names, child.output_names
        self.ready.set()
        log.info(
            "predictor process %s ready (inputs=%s%s%s)",
            child.pid,
            self.input_names,
            f", pinned to CPUs {self.cpus}" if self.cpus else "",
            ", idle CPU class" if self.idle_cpu else "",
        )

    def _kill(self) -> None:
        """End the current child for good (killed, segments removed)."""
        self.ready.clear()
        if self._child is not None:
            self.last_exitcode = self._child.end()
        self._child = None

    @property
    def child(self) -> Any:
        """The current child process (a ``multiprocessing.Process``), None while there is none."""
        return None if self._child is None else self._child.proc

    def retire(self, child: Any) -> bool:
        """Clean up after ``child`` if it is still the current child and has died (else False)."""
        with self._lock:
            if self.child is not child or child.is_alive():
                return False
            self._kill()
            return True

    def restart(self, warm: Callable[[Any], None] | None = None) -> None:
        """Start a fresh child, loaded and warmed, and take runs again (raises if it cannot)."""
        with self._lock:
            self._kill()
        self._swap_in(self._fresh(warm))

    def recycle(self, warm: Callable[[Any], None] | None = None, grace: float = 10.0) -> int | None:
        """Replace the live child without failing a run: a fresh one is loaded and warmed
        while the old one serves, they swap between batches, and the old one is asked to
        stop (killed after ``grace`` s). Returns the fresh child's RSS once warm. Raises,
        with the old child still serving, if the fresh one cannot start."""
        fresh = self._fresh(warm)
        fresh_rss = rss_bytes(fresh.pid)
        installed, old = self._swap_in(fresh)
        if old is not None:
            old.end(grace)
        return fresh_rss if installed else None

    def _fresh(self, warm: Callable[[Any], None] | None) -> PredictorChild:
        """A new child, loaded and warmed (ended if either fails)."""
        fresh = self._loaded(self._spawn())
        self._warm(fresh, warm)
        return fresh

    def _swap_in(self, fresh: PredictorChild) -> tuple[bool, PredictorChild | None]:
        """Make ``fresh`` the child that takes runs, between two runs; returns whether it was
        installed and the child it replaced (closed meanwhile: ``fresh`` is ended)."""
        with self._lock:
            if self._closed:
                fresh.end()
                return False, None
            old, self._child = self._child, fresh
            self.input_names, self.output_names = fresh.input_names, fresh.output_names
            self.ready.set()
            return True, old

    def _warm(self, fresh: PredictorChild, warm: Callable[[Any], None] | None) -> None:
        """Run ``warm`` on ``fresh`` through a feed segment of its own (the current child
        keeps serving); ``fresh`` is ended if it fails."""
        if warm is None:
            return
        feed = Segment(self._prefix + f"w{self._children}_")
        try:
            warm(_ChildView(fresh, feed))
        except BaseException:
            self.last_exitcode = fresh.end()
            raise
        finally:
            feed.release(unlink=True)

    @property
    def shm_prefix(self) -> str:
        """The name prefix of every shared-memory segment this predictor and its children make."""
        return self._prefix

    @property
    def pid(self) -> int | None:
        return None if self._child is None else self._child.pid

    def rss_bytes(self) -> int | None:
        """The current child's resident memory (None: no child, or not readable here)."""
        pid = self.pid
        return None if pid is None else rss_bytes(pid)

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        check_feed(self.input_names, feed)
        if self.supervised and not self.ready.is_set():
            self._await_restart()
        with self._lock:
            if self._child is None or not self._child.proc.is_alive():
                if self.supervised:
                    raise InstanceRestarting()
                self._kill()
                self._child = self._spawn()
                self.wait_ready()
            child = self._child
            assert child is not None
            try:
                return child.run(self._feed, feed, self.run_deadline)
            except _Hung:
                log.error(
                    "predictor process %s gave no answer by its batch's deadline (+%.1fs): killing it",
                    child.pid,
                    HANG_GRACE_S,
                )
                self._kill()
                raise DeadlineExceeded(
                    f"predictor process {child.pid} hung past the batch's deadline and was killed"
                ) from None
            except (EOFError, OSError) as exc:
                code = child.proc.exitcode
                self._kill()
                if self.supervised:
                    raise InstanceRestarting(f"predictor process died during run (exit code {code})") from exc
                raise RuntimeError(f"predictor process died during run (exit code {code})") from exc

    def _await_restart(self) -> None:
        """A batch handed over just as the process died: wait for the fresh one until the
        batch's deadline rather than fail it at once."""
        wait = RESTART_WAIT_S if self.run_deadline is None else self.run_deadline - time.monotonic()
        if self.failed or wait <= 0 or not self.ready.wait(wait):
            raise InstanceRestarting()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.ready.clear()
            if self._child is not None:
                self.last_exitcode = self._child.end(grace=10.0)
            self._child = None
            self._feed.release(unlink=True)
