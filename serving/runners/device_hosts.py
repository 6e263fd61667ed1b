"""Device processes (``instance_mode: device_process``): every such predictor
instance on one device, of every op, lives in one spawned process that owns the
device, one thread per instance. On a GPU that is one CUDA context whose
instances' kernels overlap on their own streams, and the server's HTTP, pre-
and post-processing never hold a GIL against the loops that launch them.

The server side of an instance is a :class:`~serving.runners.process.ProcessPredictor`
as for ``instance_mode: process``: same feeds and outputs through shared memory,
same supervision. Only its child differs: a connection to the device process
(a Unix socket in the abstract namespace, HMAC-authenticated with a key only the
server and the process hold) instead of a process of its own. A crash or a hang
ends the device process, and with it every instance in it: a faulted CUDA
context is lost to all of them anyway. Their watchers restart them in a fresh one.

A device process ends when its last instance leaves.
Design: docs/DESIGN_NOTES.md, "One process per device".
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener, answer_challenge, deliver_challenge
from typing import Any

from serving.config.schema import LocalServiceConf
from serving.runners.cpu_plan import use_idle_cpu
from serving.runners.process import (
    STOP_REQUEST,
    ModelFactory,
    PredictorChild,
    log_as_the_server,
    name_process,
    serve_instance,
    stop_process,
)
from serving.runners.runner_modules import load_in_process, load_one

log = logging.getLogger(__name__)

#: how long a fresh device process may take to listen (its imports, on a loaded machine)
START_TIMEOUT_S = 120.0
#: how long an instance that could not load is given to leave (it returns at once) before its
#: process is taken for hung
LEAVE_S = 10.0


@dataclass(frozen=True)
class Share:
    """This instance is number ``index`` of ``size`` instances of one op on one device
    (``token`` names them): they share their weights, as thread instances do."""

    token: str
    size: int
    index: int


@dataclass(frozen=True)
class InstanceSpec:
    """What a device process needs to load one instance (sent pickled, once authenticated)."""

    conf: LocalServiceConf
    device_id: int | None
    out_prefix: str
    idle_cpu: bool = False
    factory: ModelFactory | None = None
    label: str = ""  # the op: the instance's thread is named bl-<label> (``top -H``)
    share: Share | None = None


class _Group:
    """The runners of one :class:`Share`: loaded once, by the first of its instances to come,
    as ``load_in_process`` loads thread instances; each instance then takes its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runners: list[Any] | None = None
        self.error: str | None = None
        self.taken: set[int] = set()


class Shelf:
    """In a device process: the groups of instances that share weights (a process's own, passed
    to its instance threads), each forgotten once all its instances took their runners."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}

    def load(self, spec: InstanceSpec) -> Any:
        """The instance ``spec`` describes: its share of its group's runners, or one of its own
        (the op's own model, an instance alone on its device, or an index already taken: a
        group is loaded for one life of the process)."""
        share = spec.share
        if spec.factory is not None:
            return spec.factory(spec.device_id)
        if share is None or share.size == 1:
            return load_one(spec.conf, spec.device_id)
        with self._lock:
            group = self._groups.setdefault(share.token, _Group())
        with group.lock:
            if group.runners is None and group.error is None:
                try:
                    group.runners = load_in_process(on_device(spec.conf, spec.device_id), share.size)
                except Exception as exc:  # noqa: BLE001 - the instances waiting meanwhile report it too
                    group.error = f"{type(exc).__name__}: {exc}"
                    with self._lock:  # a later try (a restart) loads afresh
                        self._groups.pop(share.token, None)
            if group.error is not None:
                raise RuntimeError(group.error)
            assert group.runners is not None
            if share.index in group.taken:
                return load_one(spec.conf, spec.device_id)
            group.taken.add(share.index)
            runner = group.runners[share.index]
            done = len(group.taken) == share.size
        if done:
            with self._lock:
                self._groups.pop(share.token, None)
        return runner


def on_device(conf: LocalServiceConf, device_id: int | None) -> LocalServiceConf:
    """``conf`` with every instance on GPU ``device_id`` (unchanged on the CPU)."""
    return conf if device_id is None else dataclasses.replace(conf, devices=str(device_id))


def device_key(conf: LocalServiceConf, device_id: int | None) -> str:
    """The device an instance runs on, as a device process is keyed and named: ``gpu0``, ``cpu``."""
    return "cpu" if conf.device_type == 0 or device_id is None else f"gpu{device_id}"


def _host_main(control: Any, address: str, authkey: bytes, name: str, log_level: int = logging.WARNING) -> None:
    """A device process: take instances on ``address`` until the server says stop (or goes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server drains, then stops us
    log_as_the_server(log_level)
    name_process(f"bl-{name}")
    listener = Listener(address, "AF_UNIX")  # the key is checked per connection, in its own thread
    threading.Thread(target=_accept, args=(listener, authkey, Shelf()), name="device-accept", daemon=True).start()
    control.send_bytes(b"ready")
    try:
        control.recv_bytes()
    except (EOFError, OSError):
        pass
    listener.close()


def _accept(listener: Listener, authkey: bytes, shelf: Shelf) -> None:
    while True:
        try:
            conn = listener.accept()
        except OSError:  # closed: the process is ending
            return
        threading.Thread(target=_instance, args=(conn, authkey, shelf), name="device-instance", daemon=True).start()


def _instance(conn: Any, authkey: bytes, shelf: Shelf) -> None:
    """One instance's thread: check the caller's key (a caller that stalls holds up only
    this thread), load the instance, serve its runs, give it back when it leaves."""
    try:
        deliver_challenge(conn, authkey)
        answer_challenge(conn, authkey)
        spec: InstanceSpec = conn.recv()  # unpickled only from a caller holding the key
        if spec.label:
            name_process(f"bl-{spec.label}")  # this thread's name
        if spec.idle_cpu:
            use_idle_cpu()  # this thread only: the other instances keep their class
        serve_instance(conn, lambda: shelf.load(spec), spec.out_prefix)
    except AuthenticationError as exc:
        log.warning("device process refused a connection: %s", exc)
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


class _Host:
    """One device process as the server sees it: the process, its control pipe, its
    address and key, and how many instances are attached."""

    def __init__(self, ctx: Any, name: str):
        self.name = name
        self.address = f"\0batchline-{name}-{secrets.token_hex(8)}"
        self._authkey = secrets.token_bytes(32)
        self.control, child_end = ctx.Pipe()
        self.proc = ctx.Process(
            target=_host_main,
            args=(child_end, self.address, self._authkey, name, logging.getLogger().getEffectiveLevel()),
            name=f"batchline-{name}",
            daemon=True,
        )
        self.proc.start()
        child_end.close()
        self.users = 0
        try:
            if not self.control.poll(START_TIMEOUT_S):
                raise RuntimeError(f"device process {name} did not start within {START_TIMEOUT_S:.0f}s")
            self.control.recv_bytes()
        except EOFError:
            self.end()
            raise RuntimeError(f"device process {name} exited at start (code {self.proc.exitcode})") from None
        except BaseException:
            self.end()
            raise
        log.info("device process %s started (pid %s)", name, self.proc.pid)

    def connect(self) -> Any:
        return Client(self.address, "AF_UNIX", authkey=self._authkey)

    def end(self, grace: float = 10.0) -> None:
        """Ask the process to stop; killed after ``grace`` s."""
        stop_process(self.proc, self.control, b"stop", grace)
        self.control.close()


class HostedChild(PredictorChild):
    """One instance in a device process, as a :class:`ProcessPredictor` drives its child.
    ``proc`` is the device process (shared): its death is this instance's."""

    def __init__(self, hosts: DeviceHosts, host: _Host, conn: Any, out_prefix: str):
        super().__init__(host.proc, conn, out_prefix)
        self._hosts = hosts
        self._host = host
        self._ended = False

    def end(self, grace: float = 0.0) -> int | None:
        """Leave the device process: asked to, for ``grace`` s. An instance that is gone, or
        going by itself (its model failed to load), just leaves. One still there without a
        grace (a hang), or that does not leave in time, has the process killed, and with it
        the other instances in it: a thread stuck in a run cannot be stopped alone."""
        left = False
        if self.proc.is_alive():
            if grace > 0:
                try:
                    self.conn.send_bytes(STOP_REQUEST)
                except OSError:
                    pass
            left = self._gone(LEAVE_S if self.refused else grace)
        if not left and self.proc.is_alive():
            log.error(
                "ending device process %s (pid %s) and every instance in it: one of them %s",
                self._host.name,
                self.proc.pid,
                "did not stop in time" if grace > 0 else "hung or failed",
            )
            self.proc.kill()
            self.proc.join(5)
        code = self.proc.exitcode if not left else 0
        self.release()  # the connection and this instance's segments; the process is not ours to reap
        if not self._ended:
            self._ended = True
            self._hosts.detach(self._host)
        return code

    def _gone(self, wait: float) -> bool:
        """Whether the instance closed its end of the connection, waiting up to ``wait`` s (it
        does once its model is given back); a late answer still unread is skipped."""
        deadline = time.monotonic() + wait
        try:
            while self.conn.poll(max(0.0, deadline - time.monotonic())):
                self.conn.recv_bytes()
        except (EOFError, OSError):
            return True
        return False


class DeviceHosts:
    """The device processes of one server, one per device, started on first use and
    ended when their last instance leaves. Thread-safe."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._hosts: dict[str, _Host] = {}

    def attach(
        self,
        conf: LocalServiceConf,
        device_id: int | None,
        out_prefix: str,
        *,
        idle_cpu: bool = False,
        factory: ModelFactory | None = None,
        label: str = "",
        share: Share | None = None,
    ) -> HostedChild:
        """A new instance in the device process of its device (started, or restarted if it
        died); it loads meanwhile: wait for it with ``wait_ready`` on the returned child."""
        key = device_key(conf, device_id)
        with self._lock:
            host = self._hosts.get(key)
            if host is None or not host.proc.is_alive():
                host = self._hosts[key] = _Host(self._ctx, key)
            host.users += 1
        conn = None
        try:
            conn = host.connect()
            conn.send(InstanceSpec(conf, device_id, out_prefix, idle_cpu, factory, label, share))
        except BaseException:
            if conn is not None:
                conn.close()
            self.detach(host)
            raise
        return HostedChild(self, host, conn, out_prefix)

    def detach(self, host: _Host) -> None:
        """An instance left ``host``; the last one out ends it."""
        with self._lock:
            host.users -= 1
            if host.users > 0:
                return
            if self._hosts.get(host.name) is host:
                del self._hosts[host.name]
        host.end()
        log.info("device process %s ended (no instance left)", host.name)

    def pids(self) -> dict[str, int]:
        """Device -> pid of its live device process."""
        with self._lock:
            return {key: int(h.proc.pid) for key, h in self._hosts.items() if h.proc.is_alive()}
