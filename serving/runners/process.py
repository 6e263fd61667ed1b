"""A predictor in its own process (``instance_mode: process``), on either engine.

The stock Paddle 3.3 CPU wheel holds the GIL inside ``Predictor.run()``, so in
one process predictors of different ops take turns and Python work (HTTP,
pre/post-processing) stops while a model runs. A :class:`ProcessPredictor`
runs the model in a child process instead: the server's thread blocks on a
pipe (GIL released) while the child computes, so det, rec and the Python work
overlap on several cores.

Feeds and outputs travel through shared memory (one segment each way, grown on
demand); only a small JSON header crosses the pipe. Nothing is pickled after
start-up, and only this server's own processes are on either end.
If the child dies, the current run raises. Unsupervised, the next run starts a
fresh child; supervised (serving.runners.supervisor, what the engine does), a
watcher restarts it in the background and runs meanwhile fail at once with
503 (:class:`~serving.errors.InstanceRestarting`), so the op's batches go to
its other instances.

A child started with ``idle_cpu`` moves itself into the idle CPU class before
loading (:func:`serving.runners.cpu_plan.use_idle_cpu`), so a background
instance (a shadow version's) runs only on CPU time the server leaves unused.
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
from typing import Any

import numpy as np

from serving.config.schema import LocalServiceConf
from serving.errors import DeadlineExceeded, InstanceRestarting
from serving.runners.cpu_plan import use_idle_cpu
from serving.runners.engines import load_one
from serving.runners.paddle_inference import check_feed
from serving.runners.shared_memory import (
    Segment,
    array_views,
    segment_prefix,
    sweep_stale,
    unlink_prefixed,
    write_arrays,
)

log = logging.getLogger(__name__)

#: how long past its batch's deadline a silent predictor process is given before it is killed as hung
HANG_GRACE_S = 1.0


def name_process(name: str) -> None:
    """Set this process's name as ``ps``, ``top`` and /proc/<pid>/comm show it
    (Linux, 15 bytes; elsewhere nothing happens)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _child_main(
    conn: Any,
    conf: LocalServiceConf,
    device_id: int | None,
    cpus: list[int] | None = None,
    idle_cpu: bool = False,
    out_prefix: str | None = None,
    label: str = "",
) -> None:
    """Child process: load the predictor, then serve run requests until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent drains, then stops us
    if label:
        name_process(f"bl-{label}")

    try:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if idle_cpu:
            use_idle_cpu()
        predictor = load_one(conf, device_id)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send_bytes(json.dumps({"status": "error", "message": f"{type(exc).__name__}: {exc}"}).encode())
        return
    conn.send_bytes(
        json.dumps({"status": "ready", "inputs": predictor.input_names, "outputs": predictor.output_names}).encode()
    )
    feed_segment, out_segment = Segment(), Segment(out_prefix)
    try:
        while True:
            try:
                request = json.loads(conn.recv_bytes())
            except EOFError:
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
                reply = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
            conn.send_bytes(json.dumps(reply).encode())
    finally:
        feed_segment.release(unlink=False)
        out_segment.release(unlink=True)


class ProcessPredictor:
    """Same interface as :class:`serving.runners.paddle_inference.PaddlePredictor`
    (``input_names``, ``output_names``, ``run``); one batch at a time."""

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
    ):
        self._conf = conf
        self.label = label  # the op it serves: the child is named bl-<label> in ps and top
        self._device_id = device_id
        self.cpus = list(cpus) if cpus else None  # the child's CPU affinity (None: inherited)
        self.idle_cpu = idle_cpu  # the child runs in the idle CPU class
        self._start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        sweep_stale()
        self._prefix = segment_prefix()
        self._feed = Segment(self._prefix + "f")
        self._out = Segment()  # the child's output segment, attached
        self._children = 0
        self._out_prefix = ""  # names of the current child's output segments
        self.ready = threading.Event()  # a child is loaded and takes runs
        self.supervised = False  # a supervisor restarts a dead child; run() never does
        self.failed = False  # the supervisor gave up: this instance will not come back
        self.last_exitcode: int | None = None  # of the last child that ended (negative: killed by that signal)
        # time.monotonic() by which the running batch must be answered (the engine sets it:
        # its requests' latest deadline); a child silent past it is hung and is killed
        self.run_deadline: float | None = None
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self.device = "cpu" if conf.device_type == 0 else f"gpu:{device_id or 0}"
        self._spawn()
        if wait_ready:
            self.wait_ready()

    def _start(self) -> None:
        self._spawn()
        self.wait_ready()

    def _spawn(self) -> None:
        parent, child = self._ctx.Pipe()
        self._children += 1
        self._out_prefix = f"{self._prefix}o{self._children}_"
        self._proc = self._ctx.Process(
            target=_child_main,
            args=(child, self._conf, self._device_id, self.cpus, self.idle_cpu, self._out_prefix, self.label),
            name="batchline-predictor",
            daemon=True,
        )
        self._proc.start()
        child.close()
        self._conn = parent

    def wait_ready(self) -> None:
        """Block until the child has loaded its model (raises if it could not)."""
        parent = self._conn
        if not parent.poll(self._start_timeout):
            self._kill()
            raise RuntimeError(f"predictor process did not start within {self._start_timeout:.0f}s")
        try:
            hello = json.loads(parent.recv_bytes())
        except EOFError:
            self._proc.join(5)
            code = self._proc.exitcode
            self._kill()
            raise RuntimeError(
                f"predictor process failed to load the model: it exited with code {code} "
                f"(model dir {self._conf.model_config})"
            ) from None
        if hello["status"] != "ready":
            self._kill()
            raise RuntimeError(f"predictor process failed to load the model: {hello['message']}")
        self.input_names, self.output_names = hello["inputs"], hello["outputs"]
        self.ready.set()
        log.info(
            "predictor process %s ready (inputs=%s%s%s)",
            self._proc.pid,
            self.input_names,
            f", pinned to CPUs {self.cpus}" if self.cpus else "",
            ", idle CPU class" if self.idle_cpu else "",
        )

    def _kill(self) -> None:
        """Stop the child for good and remove its output segments: a child that
        died, or was killed here, never unlinked them."""
        self.ready.clear()
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(5)
            self.last_exitcode = self._proc.exitcode
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
        self._out.release(unlink=False)
        if self._out_prefix and unlink_prefixed(self._out_prefix):
            log.info("removed the output segments of a predictor process that did not clean up")

    @property
    def child(self) -> Any:
        """The current child process (a ``multiprocessing.Process``), None while there is none."""
        return self._proc

    def retire(self, child: Any) -> bool:
        """If ``child`` is still the current child and has died: clean up after it
        and return True (False: a run already did, or it lives)."""
        with self._lock:
            if self._proc is not child or child.is_alive():
                return False
            self._kill()
            return True

    def restart(self, warm: Callable[[ProcessPredictor], None] | None = None) -> None:
        """Start a fresh child, wait until it is loaded and ``warm`` it, then
        take runs again (raises if it cannot load or warm)."""
        with self._lock:
            self._kill()
            self._start()
            self.ready.clear()  # loaded, not yet warm
        if warm is not None:
            warm(self)
        self.ready.set()

    @property
    def shm_prefix(self) -> str:
        """The name prefix of every shared-memory segment this predictor and its children make."""
        return self._prefix

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        check_feed(self.input_names, feed)
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                if self.supervised:
                    raise InstanceRestarting()
                self._kill()
                self._start()
            meta = write_arrays(self._feed, [(n, feed[n]) for n in self.input_names])
            try:
                self._conn.send_bytes(json.dumps({"op": "run", "shm": self._feed.name, "inputs": meta}).encode())
                self._await_reply()
                reply = json.loads(self._conn.recv_bytes())
            except (EOFError, OSError) as exc:
                code = self._proc.exitcode if self._proc is not None else None
                self._kill()
                if self.supervised:
                    raise InstanceRestarting(f"predictor process died during run (exit code {code})") from exc
                raise RuntimeError(f"predictor process died during run (exit code {code})") from exc
            if reply["status"] != "ok":
                raise RuntimeError(f"predictor process: {reply['message']}")
            shm = self._out.attach(reply["shm"])
            return [v.copy() for v in array_views(shm, reply["outputs"])]

    def _await_reply(self) -> None:
        """Wait for the child's answer until ``run_deadline`` (+ a grace); a child
        still silent then is hung: it is killed (a supervisor starts a fresh one)."""
        if self.run_deadline is None:
            return
        wait = max(0.0, self.run_deadline - time.monotonic()) + HANG_GRACE_S
        if self._conn.poll(wait):
            return
        pid = self.pid
        log.error("predictor process %s gave no answer by its batch's deadline (+%.1fs): killing it", pid, HANG_GRACE_S)
        self._kill()
        raise DeadlineExceeded(f"predictor process {pid} hung past the batch's deadline and was killed")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send_bytes(json.dumps({"op": "stop"}).encode())
                except OSError:
                    pass
            if self._proc is not None:
                self._proc.join(10)
            self._kill()
            self._feed.release(unlink=True)
