"""Hostile traffic at every door of a real server (issue 38): the HTTP front's
framing (headers that never end, pipelined requests whose answers are never
read, chunked bodies of 2-byte chunks, many connections of unfinished
headers), bodies sent to paths that take none, and gRPC messages built to cost
the most per byte (huge messages to probes, thousands of empty entries, calls
waiting for room, an enormous ``id``).

Each :class:`DoorAttack` runs against a :class:`Door` (the server's ports, its
token, its limits) while :func:`run_door_attack` samples the server's RSS every
50 ms; it returns what the server answered and the bytes the server's own
limits let it hold (``counted``). The bound of an attack is twice what it
counted, and at least 64 MB for one connection or call (:data:`FLOOR`, the RSS
noise of a quiet server, for several). A gRPC message is counted as the server
counts it: twice the largest message while one is read
(``serving.grpc.message_room.READ_FACTOR``), so one call of the largest size at
the 64 MiB default is bounded by 256 MB, not 64. ``bench/hostile.py --doors``
prints the table; ``tests/e2e/test_hostile_traffic.py`` asserts it.

The raw HTTP attacks use plain sockets: a real client library would not send
such requests."""

from __future__ import annotations

import select
import shutil
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
import requests
import yaml

from serving.grpc.message_room import READ_FACTOR
from serving.protos import inference_messages, pipeline_messages
from serving.runners.process_memory import tree_rss_bytes
from tests.support.image_fakes import image_config
from tests.support.reliability.known_good import paddle_body, valid_image
from tests.support.reliability.rss_sampler import RssSampler
from tests.support.server_process import ROOT, ServerProcess, free_port

MB = 1 << 20
SAMPLE_S = 0.05
#: what one connection or call may grow the server by
ONE_CONNECTION_BOUND = 64 * MB
#: the least bound of an attack on several connections: a quiet server's RSS moves this much
FLOOR = 16 * MB
#: request line and headers together, at most (waitress's ``max_request_header_size``)
HEADER_LIMIT = 256 << 10


@dataclass(frozen=True)
class Door:
    """Where and what the attacks hit: a server started with ``token`` and ``body_limit``
    (its ``max_body_size``), its body ``budget`` (``http.max_buffered_mb``), and gRPC on
    ``rpc_port`` (None: no gRPC attacks)."""

    host: str
    port: int
    rpc_port: int | None
    token: str
    pipeline: str
    image: bytes
    body_limit: int
    budget: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def auth(self) -> str:
        return f"Bearer {self.token}"


@dataclass
class Sent:
    """What an attack did: the answers it got (HTTP statuses, gRPC codes, or how a
    connection ended), the bytes it sent, and the bytes the server's limits let it hold."""

    answers: list[str]
    sent: int
    counted: int
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DoorAttack:
    name: str
    door: str  # "http", "v2 gRPC", "Paddle gRPC"
    what: str
    connections: int
    run: Callable[[Door], Sent]
    allowed: frozenset[str]  # answers that count as held (anything else is a problem)
    grpc: bool = False


@dataclass
class DoorOutcome:
    attack: DoorAttack
    sent: Sent
    baseline: int
    growth: int
    after: int  # RSS once the attack's connections closed and the server settled
    seconds: float
    errors: list[str] = field(default_factory=list)

    @property
    def bound(self) -> int:
        least = ONE_CONNECTION_BOUND if self.attack.connections == 1 else FLOOR
        return max(2 * self.sent.counted, least)

    def problems(self) -> list[str]:
        found = list(self.errors)
        wrong = sorted({a for a in self.sent.answers if a not in self.attack.allowed})
        if wrong:
            found.append(f"{self.attack.name}: answered {wrong}, allowed {sorted(self.attack.allowed)}")
        if self.growth > self.bound:
            found.append(f"{self.attack.name}: RSS grew {self.growth / MB:.0f} MB, bound {self.bound / MB:.0f} MB")
        return found


TOKEN = "door-attacks-token"
PIPELINE = "img"


def door_config_text(front: str, body_limit: int, config: str | None, front_workers: int = 0) -> str:
    """The served config: the model-free image pipeline, or ``config`` (a file, e.g.
    configs/ocr.yml) with the door's token, front, front processes (``http.front_workers``)
    and ``max_body_size`` on its source ops."""
    http = {"front": front, **({"front_workers": front_workers} if front_workers else {})}
    if config is None:
        extra = f"auth_token: {TOKEN}\nhttp: {yaml.safe_dump(http, default_flow_style=True).strip()}"
        return image_config(name=PIPELINE, max_body_size=body_limit, extra=extra, delay_ms=1, per_item_ms=0)
    with open(config, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc["auth_token"] = TOKEN
    doc.setdefault("http", {}).update(http)
    for op in doc["op"].values():
        if not op.get("input_ops"):
            op.setdefault("local_service_conf", {})["max_body_size"] = body_limit
    return yaml.safe_dump(doc, sort_keys=False)


def start_door_server(
    config_path: str,
    *,
    front: str,
    body_limit: int,
    root: str = ROOT,
    config: str | None = None,
    front_workers: int = 0,
) -> tuple[ServerProcess, Door]:
    """A real server at ``config_path`` (written here) of the model-free image pipeline
    (tests/support/image_fakes.py), or of ``config`` (a config file: the real models):
    ``front`` reads HTTP, ``max_body_size: body_limit``, a token, gRPC on a free port;
    warmed with a few predictions, so the attacks' growth is theirs. ``root``: the checkout
    whose code serves (another revision's, for a before and after); ``front_workers``: that
    many front processes read HTTP instead of the engine's process."""
    text = door_config_text(front, body_limit, config, front_workers)
    with open(config_path, "w", encoding="utf-8") as f:
        f.write(text)
    name = yaml.safe_load(text)["name"]
    rpc_port = free_port()
    server = ServerProcess(config_path, extra_args=("--rpc-port", str(rpc_port)), root=root, ready_timeout=300)
    image, _ = valid_image(None if config is None else f"{ROOT}/tests/data/ocr/invoice/invoice.png")
    return _warmed(server, Door("127.0.0.1", server.port, rpc_port, TOKEN, name, image, body_limit, 4 * body_limit))


def _warmed(server: ServerProcess, door: Door) -> tuple[ServerProcess, Door]:
    """After a few predictions, so that the attacks' growth is theirs (the server stopped if one fails)."""
    try:
        for _ in range(3):
            answer = requests.post(
                f"{door.url}/{door.pipeline}/prediction",
                data=paddle_body(door.image),
                headers={"Authorization": door.auth},
            )
            answer.raise_for_status()
    except BaseException:
        server.stop()
        raise
    return server, door


#: a Paddle Serving script of two ops without a model (it reads an ``image`` key's bytes)
SCRIPT_DIR = f"{ROOT}/tests/data/paddle_serving/scripts/batched"


def start_script_door_server(folder: str, *, body_limit: int, root: str = ROOT) -> tuple[ServerProcess, Door]:
    """The doors of a Paddle Serving script (``batchline serve web_service.py``): the batched
    test script copied to ``folder``, its config given the door's token, gRPC on a free port and
    ``max_body_size: body_limit``; warmed with a few predictions, as :func:`start_door_server`."""
    shutil.copytree(SCRIPT_DIR, folder)
    with open(f"{folder}/config.yml", encoding="utf-8") as f:
        conf = yaml.safe_load(f)
    rpc_port = free_port()
    conf.update(rpc_port=rpc_port, auth_token=TOKEN)
    conf["op"]["upper"]["local_service_conf"] = {"max_body_size": body_limit}
    with open(f"{folder}/config.yml", "w", encoding="utf-8") as f:
        yaml.safe_dump(conf, f)
    server = ServerProcess(f"{folder}/web_service.py", root=root, ready_timeout=300)
    image, _ = valid_image(f"{ROOT}/tests/data/ocr/invoice/invoice.png")
    return _warmed(server, Door("127.0.0.1", server.port, rpc_port, TOKEN, "echo", image, body_limit, 4 * body_limit))


# ---- raw HTTP -----------------------------------------------------------------------------------


class RawConnection:
    """One client connection that sends what it is given without waiting for answers, and
    collects what comes back (``read=False``: never reads, so the server's answers pile up)."""

    def __init__(self, door: Door, *, read: bool = True, rcvbuf: int | None = None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect: the window the server sees
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(5)
        self.sock.connect((door.host, door.port))
        self.sock.setblocking(False)
        self.read = read
        self.received = bytearray()
        self.sent = 0
        self.closed = False  # by the server (EOF or reset)

    def send(self, data: bytes | memoryview) -> int:
        """Send as much of ``data`` as the socket takes now; 0 once closed."""
        if self.closed:
            return 0
        try:
            n = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self.closed = True
            return 0
        self.sent += n
        return n

    def poll(self) -> None:
        if self.closed or not self.read:
            return
        while select.select([self.sock], [], [], 0)[0]:
            try:
                chunk = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            if len(self.received) < 1 << 16:
                self.received += chunk

    def status(self) -> str:
        """The first answer's status code, or how the connection ended without one."""
        if self.received.startswith(b"HTTP/"):
            return self.received.split(b" ", 2)[1].decode()
        return "closed" if self.closed else "open"

    def close(self) -> None:
        self.sock.close()


def _pump(conns: list[RawConnection], data: Callable[[RawConnection], bytes], seconds: float, stop_each: int) -> None:
    """Keep sending ``data(conn)`` on every connection until it closed, sent ``stop_each``
    bytes, or ``seconds`` passed."""
    end = time.monotonic() + seconds
    views = {id(c): memoryview(b"") for c in conns}
    while time.monotonic() < end:
        active = [c for c in conns if not c.closed and c.sent < stop_each]
        if not active:
            return
        progressed = False
        for c in active:
            view = views[id(c)]
            if not view:
                view = memoryview(data(c))
            n = c.send(view)
            views[id(c)] = view[n:]
            progressed |= n > 0
            c.poll()
        if not progressed:
            time.sleep(0.005)


def _finish(conns: list[RawConnection], wait_s: float = 2.0) -> list[str]:
    end = time.monotonic() + wait_s
    while time.monotonic() < end and any(not c.closed and not c.received for c in conns if c.read):
        for c in conns:
            c.poll()
        time.sleep(0.01)
    statuses = [c.status() for c in conns]
    for c in conns:
        c.close()
    return statuses


def endless_header(connections: int, seconds: float = 8.0) -> Callable[[Door], Sent]:
    """No token; a header value that never ends, sent as fast as the server reads it."""

    def run(door: Door) -> Sent:
        conns = [RawConnection(door) for _ in range(connections)]
        head = b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Endless: "
        for c in conns:
            c.send(head)
        block = b"a" * 65536
        _pump(conns, lambda c: block, seconds, 1 << 40)
        sent = sum(c.sent for c in conns)
        return Sent(_finish(conns), sent, connections * HEADER_LIMIT)

    return run


def pipelined_unread(seconds: float = 8.0, total: int = 4 * MB, hold_s: float = 4.0) -> Callable[[Door], Sent]:
    """No token; pipelined GETs of a page file on one connection whose answers are never read."""

    def run(door: Door) -> Sent:
        conn = RawConnection(door, read=False, rcvbuf=4096)
        one = b"GET /page.css HTTP/1.1\r\nHost: x\r\n\r\n"
        block = one * (65536 // len(one))
        _pump([conn], lambda c: block, seconds, total)
        time.sleep(hold_s)  # the server answers what it read, into a connection nobody reads
        sent = conn.sent
        conn.close()
        # what the front may hold: one read ahead of the request in service, and its answer
        return Sent(["unread"], sent, 2 * HEADER_LIMIT)

    return run


def chunked_crumbs(connections: int, seconds: float = 20.0) -> Callable[[Door], Sent]:
    """With the token: a chunked prediction body of 2-byte chunks per connection, sent until
    the server answers; each connection's wire bytes (framing included) are counted. ("open":
    the server was still reading when ``seconds`` ran out; waitress parses such chunks at a
    few MB/s, so at the 64 MiB default it never reaches the limit in time.)"""

    def run(door: Door) -> Sent:
        conns = [RawConnection(door) for _ in range(connections)]
        head = (
            f"POST /{door.pipeline}/prediction HTTP/1.1\r\nHost: x\r\nAuthorization: {door.auth}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        for c in conns:
            c.send(head)
        block = b"2\r\nab\r\n" * (65536 // 7)
        _pump(conns, lambda c: block, seconds, 2 * door.body_limit + (1 << 20))
        sent = sum(c.sent for c in conns)
        counted = min(door.budget, connections * door.body_limit)
        return Sent(_finish(conns), sent, counted)

    return run


def unfinished_headers(connections: int, each: int = 208_000, hold_s: float = 3.0) -> Callable[[Door], Sent]:
    """No token; many connections, each holding ``each`` bytes of tiny headers (``a:b``) never finished."""

    def run(door: Door) -> Sent:
        conns = [RawConnection(door) for _ in range(connections)]
        data = b"GET /health/live HTTP/1.1\r\n" + b"a:b\r\n" * (each // 5)
        _pump(conns, lambda c: data[c.sent :], 30.0, len(data))
        time.sleep(hold_s)
        sent = sum(c.sent for c in conns)
        return Sent(_finish(conns, 0.2), sent, sent)

    return run


OPEN_PATHS = ("/health/live", "/v2/health/ready", "/admin/reload", "/metrics")


def open_path_bodies(seconds: float = 8.0) -> Callable[[Door], Sent]:
    """No token; a body of the largest size to each path that takes none, while an
    authenticated prediction must still be answered 200 (not 503: the budget is not taken)."""

    def run(door: Door) -> Sent:
        conns = []
        for path in OPEN_PATHS:
            c = RawConnection(door)
            c.send(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {door.body_limit}\r\n\r\n".encode())
            conns.append(c)
        block = b"\0" * 65536
        prediction: list[str] = []

        def predict() -> None:
            time.sleep(0.5)  # the bodies are arriving
            r = requests.post(
                f"{door.url}/{door.pipeline}/prediction",
                data=paddle_body(door.image),
                headers={"Authorization": door.auth},
                timeout=30,
            )
            prediction.append(f"prediction {r.status_code}")

        worker = threading.Thread(target=predict)
        worker.start()
        _pump(conns, lambda c: block, seconds, door.body_limit)
        worker.join(30)
        sent = sum(c.sent for c in conns)
        answers = _finish(conns) + prediction
        return Sent(answers, sent, 0)

    return run


# ---- gRPC ---------------------------------------------------------------------------------------

V2 = "/inference.GRPCInferenceService/"
PADDLE = "/baidu.paddle_serving.pipeline_serving.PipelineService/inference"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def reading_room(door: Door) -> int:
    """What the server counts for one gRPC message while it reads it: twice the largest."""
    return min(door.budget, READ_FACTOR * door.body_limit)


def _code(call: Callable[[], bytes], paddle: bool) -> str:
    """The call's status code; for a Paddle Serving call that ended OK, its ``err_no``
    (Paddle Serving answers a failure in the message)."""
    try:
        answer = call()
    except grpc.RpcError as err:
        return err.code().name
    return f"err_no {pipeline_messages().Response.FromString(answer).err_no}" if paddle else "OK"


def _calls(
    door: Door, method: str, messages: list[bytes], concurrency: int, token: bool, timeout: float = 60.0
) -> list[str]:
    """Send each raw message to ``method``, ``concurrency`` at a time, each with a deadline of
    ``timeout`` s; their answers (:func:`_code`)."""
    metadata = (("authorization", door.auth),) if token else ()
    options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(f"{door.host}:{door.rpc_port}", options=options) as channel:
        stub: Callable[..., bytes] = channel.unary_unary(method)  # raw bytes both ways
        with ThreadPoolExecutor(concurrency) as pool:
            futures = [
                pool.submit(_code, lambda m=m: stub(m, metadata=metadata, timeout=timeout), method == PADDLE)
                for m in messages
            ]
            return [f.result() for f in futures]


def huge_probe(method: str, calls: int, token: bool, size: int | None = None) -> Callable[[Door], Sent]:
    """``calls`` messages of the largest size, 16 at a time, to a small v2 method: one
    unknown 8 MB field (``ServerLive``), or an 8 MB model name (``ModelMetadata``)."""

    def run(door: Door) -> Sent:
        n = size or door.body_limit - 16
        message = _field(1, b"m" * n)
        codes = _calls(door, V2 + method, [message] * calls, 16, token)
        # the open probe reads nothing; an authenticated method reads under the budget
        return Sent(codes, len(message) * calls, door.budget if token else 0)

    return run


def empty_inputs(size: Callable[[Door], int], parallel: int) -> Callable[[Door], Sent]:
    """With the token: ``ModelInfer`` of ``size(door)`` bytes of empty inputs, ``parallel`` at once."""

    def run(door: Door) -> Sent:
        head = _field(1, door.pipeline.encode())
        message = head + b"\x2a\x00" * ((size(door) - len(head)) // 2)
        codes = _calls(door, V2 + "ModelInfer", [message] * parallel, parallel, True)
        return Sent(codes, len(message) * parallel, min(door.budget, parallel * reading_room(door)))

    return run


def waiting_calls(calls: int, wait_s: float = 3.0) -> Callable[[Door], Sent]:
    """With the token: the body budget taken by HTTP predictions whose bodies never come
    (each claimed its Content-Length), then ``calls`` ModelInfer messages of the largest
    size at once, waiting for room until their deadline: they hold no more than a window."""

    def run(door: Door) -> Sent:
        holders = [RawConnection(door) for _ in range(door.budget // door.body_limit)]
        for h in holders:
            h.send(
                f"POST /{door.pipeline}/prediction HTTP/1.1\r\nHost: x\r\nAuthorization: {door.auth}\r\n"
                f"Content-Length: {door.body_limit}\r\n\r\n".encode()
            )
        time.sleep(0.5)  # their claims are taken
        message = _field(1, door.pipeline.encode()) + _field(7, b"\0" * (door.body_limit - 64))
        codes = _calls(door, V2 + "ModelInfer", [message] * calls, calls, True, timeout=wait_s)
        held = [f"holder {h.status()}" for h in holders]
        for h in holders:
            h.close()
        return Sent(codes + held, len(message) * calls, door.budget)

    return run


def maximal_burst(calls: int) -> Callable[[Door], Sent]:
    """With the token: ``calls`` ModelInfer messages of the largest size at once, with room:
    read as room comes free; each one read is counted."""

    def run(door: Door) -> Sent:
        message = _field(1, door.pipeline.encode()) + _field(7, b"\0" * (door.body_limit - 64))
        codes = _calls(door, V2 + "ModelInfer", [message] * calls, calls, True)
        read = sum(c != "UNAVAILABLE" for c in codes)  # refused for want of room: never read
        return Sent(codes, len(message) * calls, len(message) * read)

    return run


def long_id(chars: int = 1_000_000) -> Callable[[Door], Sent]:
    """With the token: a ``ModelInfer`` whose ``id`` is a million characters (HTTP: 400)."""

    def run(door: Door) -> Sent:
        request = inference_messages().ModelInferRequest(model_name=door.pipeline, id="i" * chars)
        request.inputs.add(name="image", datatype="BYTES", shape=[1]).contents.bytes_contents.append(door.image)
        message = request.SerializeToString()
        return Sent(_calls(door, V2 + "ModelInfer", [message], 1, True), len(message), reading_room(door))

    return run


def paddle_entries(keys: int, tensors: int) -> Callable[[Door], Sent]:
    """With the token: a Paddle ``Request`` of ``keys`` empty keys and values, or ``tensors`` empty tensors."""

    def run(door: Door) -> Sent:
        message = _field(4, door.pipeline.encode()) + b"\x0a\x00\x12\x00" * keys + b"\x1a\x00" * tensors
        codes = _calls(door, PADDLE, [message], 1, True)
        return Sent(codes, len(message), reading_room(door))

    return run


def paddle_numeric_tensor() -> Callable[[Door], Sent]:
    """With the token: a Paddle ``Request`` of the largest size holding one tensor of packed
    floats (``pack_tensor_format=True``): a script reads such tensors, so they are counted, not refused."""

    def run(door: Door) -> Sent:
        floats = pipeline_messages().Tensor.DESCRIPTOR.fields_by_name["float_data"].number
        tensor = _field(1, b"x") + _field(floats, b"\0" * (door.body_limit - 64))
        message = _field(4, door.pipeline.encode()) + _field(3, tensor)
        return Sent(_calls(door, PADDLE, [message], 1, True), len(message), reading_room(door))

    return run


def v2_numeric_tensor() -> Callable[[Door], Sent]:
    """With the token: ``ModelInfer`` of one FP32 input whose shape and raw contents are of the
    largest size (a script's pipeline takes numeric tensors: their elements are counted first)."""

    def run(door: Door) -> Sent:
        n = (door.body_limit - 128) // 4
        request = inference_messages().ModelInferRequest(model_name=door.pipeline)
        request.inputs.add(name="x", datatype="FP32", shape=[n])
        request.raw_input_contents.append(b"\0" * (4 * n))
        message = request.SerializeToString()
        return Sent(_calls(door, V2 + "ModelInfer", [message], 1, True), len(message), reading_room(door))

    return run


def door_attacks() -> list[DoorAttack]:
    refused_header = frozenset({"431", "closed"})
    return [
        DoorAttack("endless_header", "http", endless_header.__doc__ or "", 1, endless_header(1), refused_header),
        DoorAttack(
            "endless_header_16",
            "http",
            "16 connections of " + (endless_header.__doc__ or ""),
            16,
            endless_header(16),
            refused_header,
        ),
        DoorAttack(
            "pipelined_unread", "http", pipelined_unread.__doc__ or "", 1, pipelined_unread(), frozenset({"unread"})
        ),
        DoorAttack(
            "chunked_crumbs",
            "http",
            "4 connections: " + (chunked_crumbs.__doc__ or ""),
            4,
            chunked_crumbs(4),
            frozenset({"413", "503", "closed", "open"}),
        ),
        DoorAttack(
            "unfinished_headers",
            "http",
            "100 connections: " + (unfinished_headers.__doc__ or ""),
            100,
            unfinished_headers(100),
            frozenset({"open", "431", "closed"}),
        ),
        DoorAttack(
            "open_path_bodies",
            "http",
            open_path_bodies.__doc__ or "",
            4,
            open_path_bodies(),
            frozenset({"401", "413", "prediction 200"}),
        ),
        DoorAttack(
            "v2_live_huge",
            "v2 gRPC",
            "160 x " + (huge_probe.__doc__ or ""),
            160,
            huge_probe("ServerLive", 160, False),
            frozenset({"OK"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_metadata_huge",
            "v2 gRPC",
            "160 x ModelMetadata, no token",
            160,
            huge_probe("ModelMetadata", 160, False),
            frozenset({"UNAUTHENTICATED"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_waiting",
            "v2 gRPC",
            waiting_calls.__doc__ or "",
            40,
            waiting_calls(40),
            frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "holder open"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_empty_inputs_1mb",
            "v2 gRPC",
            "1 MB of empty inputs",
            1,
            empty_inputs(lambda d: MB, 1),
            frozenset({"RESOURCE_EXHAUSTED", "INVALID_ARGUMENT"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_empty_inputs_max",
            "v2 gRPC",
            "a message of the largest size of empty inputs",
            1,
            empty_inputs(lambda d: d.body_limit - 64, 1),
            frozenset({"RESOURCE_EXHAUSTED", "INVALID_ARGUMENT"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_empty_inputs_4x",
            "v2 gRPC",
            "4 at once, half the largest size each, of empty inputs",
            4,
            empty_inputs(lambda d: d.body_limit // 2, 4),
            frozenset({"RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "UNAVAILABLE"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_long_id", "v2 gRPC", long_id.__doc__ or "", 1, long_id(), frozenset({"INVALID_ARGUMENT"}), grpc=True
        ),
        DoorAttack(
            "paddle_many_keys",
            "Paddle gRPC",
            "800k empty keys and values",
            1,
            paddle_entries(800_000, 0),
            frozenset({"err_no 413"}),
            grpc=True,
        ),
        DoorAttack(
            "paddle_many_tensors",
            "Paddle gRPC",
            "400k empty tensors",
            1,
            paddle_entries(0, 400_000),
            frozenset({"err_no 413"}),
            grpc=True,
        ),
        DoorAttack(
            "paddle_numeric_tensor",
            "Paddle gRPC",
            paddle_numeric_tensor.__doc__ or "",
            1,
            paddle_numeric_tensor(),
            frozenset({"err_no 413"}),
            grpc=True,
        ),
        DoorAttack(
            "v2_numeric_tensor",
            "v2 gRPC",
            v2_numeric_tensor.__doc__ or "",
            1,
            v2_numeric_tensor(),
            # batchline's own pipeline: one input that is not its kind (400); a script's: past its values (413)
            frozenset({"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"}),
            grpc=True,
        ),
    ]


def burst_attacks() -> list[DoorAttack]:
    """Not an attack of issue 38's table: what many clients of the largest legitimate
    message cost at once, reported apart, because part of it stays in glibc's per-thread
    arenas after it (serving/runners/heap_trim.py says which part, and why it stays)."""
    return [
        DoorAttack(
            "v2_maximal_burst",
            "v2 gRPC",
            maximal_burst.__doc__ or "",
            40,
            maximal_burst(40),
            frozenset({"INVALID_ARGUMENT", "UNAVAILABLE"}),  # (no inputs: 400 once read)
            grpc=True,
        ),
    ]


def run_door_attack(door: Door, pid: int, attack: DoorAttack, *, settle_s: float = 1.0) -> DoorOutcome:
    """Run ``attack`` against ``door`` while sampling the RSS of the server ``pid`` (children
    included): the growth is the peak over the median of the second before; ``after`` is
    the RSS once its connections closed and the server had ``2 * settle_s`` to settle."""
    errors: list[str] = []
    with RssSampler(pid, interval_s=SAMPLE_S) as sampler:
        baseline = sampler.baseline(settle_s)
        t0 = time.monotonic()
        try:
            sent = attack.run(door)
        except (OSError, grpc.RpcError, requests.RequestException) as exc:
            errors.append(f"{attack.name}: {type(exc).__name__}: {exc}")
            sent = Sent([], 0, 0)
        seconds = time.monotonic() - t0
        time.sleep(2 * settle_s)
    after = sampler.samples[-1][1] if sampler.samples else 0
    growth = max(0, sampler.peak_after_baseline() - baseline)
    return DoorOutcome(attack, sent, baseline, growth, after, seconds, errors)


def format_door_table(outcomes: list[DoorOutcome]) -> str:
    rows = [
        "| door | attack | sent | answers | counted | RSS growth | bound | RSS after | time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        answers = ", ".join(f"{a} x {n}" if n > 1 else a for a, n in _tally(o.sent.answers))
        rows.append(
            f"| {o.attack.door} | {o.attack.name} | {o.sent.sent / MB:.1f} MB | {answers} "
            f"| {o.sent.counted / MB:.1f} MB | +{o.growth / MB:.0f} MB | {o.bound / MB:.0f} MB "
            f"| {o.after / MB:.0f} MB | {o.seconds:.1f} s |"
        )
    return "\n".join(rows)


def _tally(answers: list[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    return list(counts.items())


def settled_rss(pid: int, below: float, within_s: float = 15.0) -> int:
    """The RSS of the server ``pid`` (children included) once it is ``below`` bytes, or after
    ``within_s`` (freed memory goes back on the server's heap-trim interval, not at once)."""
    end = time.monotonic() + within_s
    rss = tree_rss_bytes(pid)
    while rss > below and time.monotonic() < end:
        time.sleep(0.25)
        rss = tree_rss_bytes(pid)
    return rss
