"""A Paddle predictor in its own process (``instance_mode: process``).

The stock Paddle 3.3 CPU wheel holds the GIL inside ``Predictor.run()``, so in
one process predictors of different ops take turns and Python work (HTTP,
pre/post-processing) stops while a model runs. A :class:`ProcessPredictor`
runs the model in a child process instead: the server's thread blocks on a
pipe (GIL released) while the child computes, so det, rec and the Python work
overlap on several cores.

Feeds and outputs travel through shared memory (one segment each way, grown on
demand); only a small JSON header crosses the pipe. Nothing is pickled after
start-up, and only this server's own processes are on either end.
If the child dies, the current run raises (the engine retries the batch item
by item) and the next run starts a fresh child.
"""
from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
from multiprocessing import shared_memory
from typing import Any, Mapping

import numpy as np

log = logging.getLogger(__name__)


class _Segment:
    """A shared-memory segment this process may grow (creator) or just attach.

    The creator unlinks it. Python's resource tracker (shared by the server
    and its children) still knows every segment, so if the server is killed
    outright the tracker unlinks what is left once the last process exits."""

    def __init__(self) -> None:
        self.shm: shared_memory.SharedMemory | None = None

    @property
    def name(self) -> str:
        assert self.shm is not None
        return self.shm.name

    def ensure(self, size: int) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.size < size:
            self.release()
            self.shm = shared_memory.SharedMemory(create=True, size=max(size, 1 << 20))
        return self.shm

    def attach(self, name: str) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.name != name:
            if self.shm is not None:
                self.shm.close()
            self.shm = shared_memory.SharedMemory(name=name)
        return self.shm

    def release(self, unlink: bool = True) -> None:
        if self.shm is not None:
            self.shm.close()
            if unlink:
                try:
                    self.shm.unlink()
                except FileNotFoundError:
                    pass
            self.shm = None


def _write(segment: _Segment, arrays: list[tuple[str, np.ndarray]]) -> list[dict[str, Any]]:
    arrays = [(n, np.ascontiguousarray(a)) for n, a in arrays]
    shm = segment.ensure(sum(a.nbytes for _, a in arrays))
    meta, offset = [], 0
    for name, array in arrays:
        view = np.ndarray(array.shape, array.dtype, buffer=shm.buf, offset=offset)
        view[...] = array
        del view
        meta.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
        offset += array.nbytes
    return meta


def _views(shm: shared_memory.SharedMemory, meta: list[dict[str, Any]]) -> list[np.ndarray]:
    return [np.ndarray(tuple(m["shape"]), np.dtype(m["dtype"]), buffer=shm.buf, offset=m["offset"]) for m in meta]


def _child_main(conn: Any, conf: Any, device_id: int | None, cpus: list[int] | None = None) -> None:
    """Child process: load the predictor, then serve run requests until told to stop."""
    import signal

    from serving.predictor import PaddlePredictor

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent drains, then stops us

    try:
        if cpus:
            os.sched_setaffinity(0, cpus)
        predictor = PaddlePredictor.load(conf, device_id)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send_bytes(json.dumps({"status": "error", "message": f"{type(exc).__name__}: {exc}"}).encode())
        return
    conn.send_bytes(json.dumps({"status": "ready", "inputs": predictor.input_names,
                                "outputs": predictor.output_names}).encode())
    feed_segment, out_segment = _Segment(), _Segment()
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
                views = _views(shm, request["inputs"])
                outputs = predictor.run({m["name"]: v for m, v in zip(request["inputs"], views)})
                del views
                meta = _write(out_segment, [(str(i), o) for i, o in enumerate(outputs)])
                reply = {"status": "ok", "shm": out_segment.name, "outputs": meta}
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                reply = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
            conn.send_bytes(json.dumps(reply).encode())
    finally:
        feed_segment.release(unlink=False)
        out_segment.release(unlink=True)


class ProcessPredictor:
    """Same interface as :class:`serving.predictor.PaddlePredictor`
    (``input_names``, ``output_names``, ``run``); one batch at a time."""

    def __init__(self, conf: Any, device_id: int | None = None, *, start_timeout: float = 300.0,
                 wait_ready: bool = True, cpus: list[int] | None = None):
        self._conf = conf
        self._device_id = device_id
        self.cpus = list(cpus) if cpus else None  # the child's CPU affinity (None: inherited)
        self._start_timeout = start_timeout
        self._ctx = multiprocessing.get_context("spawn")
        self._feed = _Segment()
        self._out = _Segment()
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self.input_names: list[str] = []
        self.output_names: list[str] = []
        self.device = "cpu" if int(getattr(conf, "device_type", 0)) == 0 else f"gpu:{device_id or 0}"
        self._spawn()
        if wait_ready:
            self.wait_ready()

    def _start(self) -> None:
        self._spawn()
        self.wait_ready()

    def _spawn(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_child_main, args=(child, self._conf, self._device_id, self.cpus),
                                       name="batchline-predictor", daemon=True)
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
            raise RuntimeError(f"predictor process failed to load the model: it exited with code {code} "
                               f"(model dir {getattr(self._conf, 'model_config', None)})") from None
        if hello["status"] != "ready":
            self._kill()
            raise RuntimeError(f"predictor process failed to load the model: {hello['message']}")
        self.input_names, self.output_names = hello["inputs"], hello["outputs"]
        log.info("predictor process %s ready (inputs=%s%s)", self._proc.pid, self.input_names,
                 f", pinned to CPUs {self.cpus}" if self.cpus else "")

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        missing = [n for n in self.input_names if n not in feed]
        extra = [n for n in feed if n not in self.input_names]
        if missing or extra:
            raise ValueError(f"bad feed: missing {missing}, unexpected {extra} (model inputs: {self.input_names})")
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._kill()
                self._start()
            meta = _write(self._feed, [(n, feed[n]) for n in self.input_names])
            try:
                self._conn.send_bytes(json.dumps({"op": "run", "shm": self._feed.name, "inputs": meta}).encode())
                reply = json.loads(self._conn.recv_bytes())
            except (EOFError, OSError) as exc:
                code = self._proc.exitcode if self._proc is not None else None
                self._kill()
                self._out.release(unlink=True)  # the dead child cannot unlink its segment
                raise RuntimeError(f"predictor process died during run (exit code {code})") from exc
            if reply["status"] != "ok":
                raise RuntimeError(f"predictor process: {reply['message']}")
            shm = self._out.attach(reply["shm"])
            return [v.copy() for v in _views(shm, reply["outputs"])]

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
            self._out.release(unlink=False)
            self._feed.release(unlink=True)


def pins_cpus(conf: Any) -> bool:
    """Whether predictor processes of ``conf`` get pinned CPU sets (OpenVINO on CPU)."""
    return bool(getattr(conf, "use_openvino", False)) and int(getattr(conf, "device_type", 0)) == 0


def pinned_cpu_count(conf: Any) -> int:
    """CPUs the predictor processes of ``conf`` are pinned to, before wrapping (0: not pinned)."""
    if getattr(conf, "instance_mode", "thread") != "process" or not pins_cpus(conf):
        return 0
    return int(getattr(conf, "instance_num", 1)) * int(getattr(conf, "thread_num", 1))


def openvino_cpu_sets(conf: Any, count: int, offset: int = 0) -> list[list[int] | None]:
    """CPU affinity for each of ``count`` predictor processes of ``conf``.

    OpenVINO binds its inference threads to cores, and every process picks the
    same first cores of its affinity mask: two OpenVINO processes on a 2-core
    machine shared one core, each at half speed (``bench/openvino_pinning.py``:
    141 ms per call each, against 71-74 ms pinned). So OpenVINO processes get
    disjoint sets of ``thread_num`` CPUs, consecutive from ``offset``, wrapping
    round the CPUs this server may use. Other engines are left unpinned
    (``None``): the OS balances them better than a fixed plan."""
    if not pins_cpus(conf):
        return [None] * count
    available = sorted(os.sched_getaffinity(0))
    per = max(1, min(int(getattr(conf, "thread_num", 1)), len(available)))
    return [[available[(offset + i * per + k) % len(available)] for k in range(per)] for i in range(count)]


def create_process_predictors(conf: Any, count: int, cpu_offset: int = 0) -> list[ProcessPredictor]:
    """``count`` predictor processes; on GPU spread round-robin over ``device_ids``;
    with ``use_openvino`` pinned to CPU sets from ``cpu_offset`` (:func:`openvino_cpu_sets`)."""
    device_ids = list(getattr(conf, "device_ids", []) or [])
    gpu = int(getattr(conf, "device_type", 0)) >= 1
    cpu_sets = openvino_cpu_sets(conf, count, cpu_offset)
    runners = [ProcessPredictor(conf, (device_ids or [0])[i % max(1, len(device_ids))] if gpu else None,
                                wait_ready=False, cpus=cpu_sets[i]) for i in range(count)]
    try:
        for runner in runners:  # the children load their models in parallel
            runner.wait_ready()
    except Exception:
        for runner in runners:
            runner.close()
        raise
    return runners
