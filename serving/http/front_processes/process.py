"""One front process, started by :mod:`.workers` (the link key on stdin): the app behind
an HTTP front on the shared port, the engine reached through a :class:`RemoteRepository`.
SIGINT and SIGHUP are the server process's; SIGTERM, or losing the engine, drains it."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Client

from serving.http import shared_port
from serving.http.app import create_app
from serving.http.early_refusals import FrontGate
from serving.http.front_processes.link import FrontHello, Wire
from serving.http.front_processes.remote_pipelines import RemoteRepository
from serving.http.http_server import HttpServer
from serving.runners.heap_trim import HeapTrim
from serving.runners.process import name_process
from serving.service.limits import http_threads

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m serving.http.front_processes.process")
    parser.add_argument("--address", required=True, help="the engine's link (an abstract Unix socket name)")
    parser.add_argument("--host", required=True, help="the server's address (shared: serving.http.shared_port)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s")
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    name_process(f"batchline-fe{args.index}")
    listening = shared_port.listen_on(args.host, args.port)  # before linking: the engine waits for the link
    authkey = bytes.fromhex(sys.stdin.readline().strip())
    wire = Wire(Client("\0" + args.address, family="AF_UNIX", authkey=authkey))
    wire.send((args.index,))
    (hello,) = wire.recv()
    assert isinstance(hello, FrontHello)
    repository = RemoteRepository(wire, hello.snapshot)
    config = hello.snapshot.config
    share = 1.0 / hello.count
    app = create_app(repository, auth_token=hello.auth_token, admin_token=hello.admin_token, budget_share=share)
    gate = FrontGate(hello.auth_token, hello.admin_token)
    threads = http_threads(config)
    # a light prediction (text, one input) answered on the front's loop, the rest by the app in worker threads
    front = HttpServer(
        app, config.http, gate, threads=threads, sock=listening, budget_share=share, answers_on_loop=True
    )
    repository.on_reload(front.apply_body_limits)
    threading.Thread(target=repository.serve, args=(stop.set,), name="engine-link", daemon=True).start()
    gc.freeze()  # what start-up built lives as long as the process: the collector need not walk it again
    front.start()
    heap = HeapTrim().start()  # bodies and decoded images freed: their pages back to the system
    stop.wait()
    front.drain(app.core.handlers)
    heap.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
