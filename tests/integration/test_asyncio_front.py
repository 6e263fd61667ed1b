"""The asyncio front (``http.front: asyncio``), the one HTTP server, and HTTP/1.1's
corners: the same answers waitress gave for the same requests (recorded when
both fronts served, tests/data/http/front_answers.json), pipelining,
HTTP/1.0, ``Expect: 100-continue``, oversized headers, malformed requests,
idle connections and the connection limit. The rules both fronts share
(tokens, body limits, budgets, deadlines) are tests/integration/test_http_front.py's.

Real servers (:class:`tests.support.live_app.LiveApp`) spoken to over raw sockets."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import Executor
from pathlib import Path

import pytest

from tests.support.client_fakes import text_config
from tests.support.live_app import LiveApp

TOKEN = "front-secret"
WITHIN_S = 15.0
BODY = json.dumps({"key": ["text"], "value": ["good"]}).encode()


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    for var in ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)


def config(front: str, **http) -> dict:
    cfg = text_config(auth_token=TOKEN)
    cfg["http"] = {"front": front, **http}
    return cfg


@pytest.fixture(scope="module")
def fronts():
    with LiveApp(config("asyncio")) as fast:
        yield (fast,)


def connect(live: LiveApp) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", live.server.port), timeout=WITHIN_S)
    sock.settimeout(WITHIN_S)
    return sock


class Reader:
    """Answers read off one connection, one at a time (pipelined ones too)."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buf = sock, b""

    def answer(self, head_only: bool = False) -> tuple[str, list[tuple[str, str]], bytes]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status, *lines = head.decode("latin-1").split("\r\n")
        headers = [tuple(line.split(": ", 1)) for line in lines]
        length = 0 if head_only else int(dict((k.lower(), v) for k, v in headers).get("content-length", 0))
        while len(self.buf) < length:
            self._more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body  # type: ignore[return-value]

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False

    def _more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed before a whole answer")
        self.buf += data


def post(path: str, body: bytes = BODY, token: str | None = TOKEN, extra: str = "", version: str = "1.1") -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST {path} HTTP/{version}\r\nHost: t\r\nContent-Type: application/json\r\n{auth}{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def get(path: str, extra: str = "", version: str = "1.1", method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/{version}\r\nHost: t\r\n{extra}\r\n".encode()


REQUESTS = {
    "paddle": (post("/ernie/prediction"), False),
    "native": (post("/ernie/predict", json.dumps({"inputs": [{"text": "good"}]}).encode()), False),
    "no token": (post("/ernie/prediction", token=None), False),
    "wrong token": (post("/ernie/prediction", token="nope"), False),
    "encoded path, no token": (post("/ernie/predictio%6E", token=None), False),  # refused by its decoded path
    "bad json": (post("/ernie/prediction", b"{nope"), False),
    "bad input": (post("/ernie/prediction", json.dumps({"key": ["text"], "value": ["BAD"]}).encode()), False),
    "unknown pipeline": (post("/nope/prediction"), False),
    "wrong method": (get("/ernie/prediction"), False),
    "live": (get("/health/live"), False),
    "ready": (get("/health/ready"), False),
    "listing": (get("/pipelines"), False),
    "not found": (get("/no/such/path"), False),
    "head": (get("/health/live", method="HEAD"), True),
    "query": (get("/health/live?x=1&y=%20"), False),
    "closing": (get("/health/live", extra="Connection: close\r\n"), False),
    "http/1.0": (get("/health/live", version="1.0"), False),
    "http/1.0 keep-alive": (get("/health/live", extra="Connection: keep-alive\r\n", version="1.0"), False),
}


#: what waitress answered each of REQUESTS, recorded at 3abea1a (where the asyncio front answered alike)
WAITRESS_ANSWERS = json.loads((Path(__file__).parents[1] / "data" / "http" / "front_answers.json").read_text())


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_the_front_answers_as_waitress_did(fronts, name):
    data, head_only = REQUESTS[name]
    (live,) = fronts
    with connect(live) as sock:
        sock.sendall(data)
        status, headers, body = Reader(sock).answer(head_only)
    # the same headers, in any order; Date is the clock's
    answer = [status, sorted([list(h) for h in headers if h[0] != "Date"]), body.decode("latin-1")]
    assert answer == WAITRESS_ANSWERS[name]


def test_pipelined_requests_are_answered_in_order_on_one_connection(fronts):
    (fast,) = fronts
    texts = ["good", "bad", "好"]
    with connect(fast) as sock:
        sock.sendall(b"".join(post("/ernie/predict", json.dumps({"inputs": [{"text": t}]}).encode()) for t in texts))
        reader = Reader(sock)
        labels = [json.loads(reader.answer()[2])["results"][0]["label"] for _ in texts]
    assert labels == ["positive", "negative", "positive"]


def test_a_refusal_behind_a_request_in_service_comes_after_its_answer(fronts):
    (fast,) = fronts
    with connect(fast) as sock:
        sock.sendall(post("/ernie/prediction") + post("/ernie/prediction", token=None))
        reader = Reader(sock)
        first, second = reader.answer(), reader.answer()
        assert first[0] == "HTTP/1.1 200 OK" and json.loads(first[2])["err_no"] == 0
        assert second[0] == "HTTP/1.1 401 Unauthorized" and ("Connection", "close") in second[1]
        assert reader.closed()


def test_http_1_0_keeps_the_connection_only_when_asked(fronts):
    (fast,) = fronts
    with connect(fast) as sock:
        sock.sendall(get("/health/live", extra="Connection: keep-alive\r\n", version="1.0"))
        reader = Reader(sock)
        status, headers, _ = reader.answer()
        assert status.startswith("HTTP/1.0 200") and ("Connection", "Keep-Alive") in headers
        sock.sendall(get("/health/live", version="1.0"))
        assert reader.answer()[0].startswith("HTTP/1.0 200") and reader.closed()


def test_expect_100_continue_is_answered_before_the_body(fronts):
    (fast,) = fronts
    with connect(fast) as sock:
        head, _, body = post("/ernie/prediction", extra="Expect: 100-continue\r\n").partition(b"\r\n\r\n")
        sock.sendall(head + b"\r\n\r\n")
        reader = Reader(sock)
        assert reader.answer(head_only=True)[0] == "HTTP/1.1 100 Continue"
        sock.sendall(body)
        assert reader.answer()[0] == "HTTP/1.1 200 OK"


def test_no_continue_for_a_request_refused_before_its_body(fronts):
    (fast,) = fronts
    with connect(fast) as sock:
        head, _, _ = post("/ernie/prediction", token=None, extra="Expect: 100-continue\r\n").partition(b"\r\n\r\n")
        sock.sendall(head + b"\r\n\r\n")
        assert Reader(sock).answer()[0] == "HTTP/1.1 401 Unauthorized"


def test_headers_over_256_kib_are_refused_431(fronts):
    (fast,) = fronts
    with connect(fast) as sock:
        try:
            sock.sendall(get("/health/live", extra="X-Big: " + "a" * (300 << 10) + "\r\n"))
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert Reader(sock).answer()[0].startswith("HTTP/1.1 431")


def test_a_header_that_never_ends_is_refused_431_while_it_arrives(fronts):
    """No blank line ever comes: the limit is counted on the bytes as they arrive."""
    for live in fronts:
        with connect(live) as sock:
            try:
                sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: t\r\nX-Endless: " + b"a" * (300 << 10))
            except (BrokenPipeError, ConnectionResetError):
                pass
            status = Reader(sock).answer()[0]
            assert status.split()[1] == "431", live.server.config.http.front


def test_more_than_256_header_fields_are_refused_431(fronts):
    for live in fronts:
        with connect(live) as sock:
            sock.sendall(get("/health/live", extra="".join(f"a{i}: b\r\n" for i in range(256))))  # and Host
            assert Reader(sock).answer()[0].split()[1] == "431", live.server.config.http.front
        with connect(live) as sock:  # 256 are served
            sock.sendall(get("/health/live", extra="".join(f"a{i}: b\r\n" for i in range(255))))
            assert Reader(sock).answer()[0] == "HTTP/1.1 200 OK"


def chunked(path: str, chunks: list[bytes], trailers: bytes = b"") -> bytes:
    frames = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c)
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head.encode() + frames + b"0\r\n" + trailers + b"\r\n"


def test_chunked_bodies_end_where_they_end_and_the_next_request_follows(fronts):
    """Blank lines inside chunk data, trailers, and a request pipelined right behind:
    each request is framed where it ends."""
    body = json.dumps({"key": ["text"], "value": ["good\r\n\r\n"]}).encode()
    pieces = [body[:7], body[7:8], body[8:]]
    data = chunked("/ernie/prediction", pieces, b"X-Trailer: 1\r\n") + chunked("/ernie/prediction", [body])
    for live in fronts:
        with connect(live) as sock:
            sock.sendall(data + get("/health/live"))
            reader = Reader(sock)
            first, second, third = reader.answer(), reader.answer(), reader.answer()
        assert first[0] == second[0] == third[0] == "HTTP/1.1 200 OK", live.server.config.http.front
        assert json.loads(first[2])["err_no"] == json.loads(second[2])["err_no"] == 0


def comes_to(condition, within_s: float = WITHIN_S) -> bool:
    """Whether ``condition`` holds within ``within_s`` (what a connection's end releases)."""
    end = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def test_a_chunked_body_is_counted_on_the_wire_framing_included():
    """1-byte chunks: 6 bytes on the wire for each byte of body. A body of a third of the
    limit is refused 413 once its framing passes the limit (waitress counts alike)."""
    limit = 64 << 10
    body = b" " * (limit // 3)
    frames = chunked("/ernie/prediction", [body[i : i + 1] for i in range(len(body))])
    for front in ("asyncio",):
        with LiveApp(config(front, max_buffered_mb=1) | {"op": text_config(max_body_size=limit)["op"]}) as live:
            with connect(live) as sock:
                try:
                    sock.sendall(frames)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                assert Reader(sock).answer()[0].startswith("HTTP/1.1 413"), front
            # given back as the refused connection closes, which may be just after its answer
            assert comes_to(lambda: live.server.body_budget.held == 0), front


def test_a_client_that_reads_no_answers_stops_being_read(fronts):
    """Pipelined requests whose answers are never read: the front answers until the
    transport's buffer is full, then neither reads nor answers; what it holds is bounded."""
    from serving.http.early_refusals import MAX_HEADER_BYTES
    from serving.http.http_server import READ_AHEAD_BYTES

    (fast,) = fronts
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", fast.server.port))
    sock.setblocking(False)
    one = get("/page.css")
    sent, end = 0, time.monotonic() + WITHIN_S
    try:
        while sent < 8 << 20 and time.monotonic() < end:
            try:
                sent += sock.send(one * 1000)
            except BlockingIOError:
                time.sleep(0.05)
                connections = [c for c in fast.server.front.connections if c.write_paused]
                if connections and connections[0].read_paused:
                    break
        (conn,) = [c for c in fast.server.front.connections if c.write_paused]
        assert conn.read_paused and len(conn.inbuf) <= READ_AHEAD_BYTES + MAX_HEADER_BYTES
        assert conn.transport.get_write_buffer_size() < 1 << 20
        assert sent < 8 << 20  # the kernel's buffers filled: the server stopped reading
    finally:
        sock.close()


SMUGGLED = b"POST /ernie/prediction HTTP/1.1\r\nContent-Length: 3\r\n"


@pytest.mark.parametrize(
    "garbage",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        SMUGGLED + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",  # two framings: refused, never guessed
        SMUGGLED + b"Content-Length: 4\r\n\r\nabcd",
    ],
)
def test_a_malformed_request_is_400_and_closed(fronts, garbage):
    (fast,) = fronts
    with connect(fast) as sock:
        sock.sendall(garbage)
        reader = Reader(sock)
        assert reader.answer()[0].startswith("HTTP/1.1 400") and reader.closed()


def test_an_idle_connection_is_closed_after_channel_timeout():
    with LiveApp(config("asyncio", channel_timeout_s=0.5)) as live, connect(live) as sock:
        reader = Reader(sock)
        sock.sendall(get("/health/live"))
        assert reader.answer()[0].endswith("200 OK")
        began = time.monotonic()
        assert reader.closed() and time.monotonic() - began < WITHIN_S


def test_a_connection_over_the_limit_is_refused_503_at_once():
    with LiveApp(config("asyncio", connection_limit=2)) as live:
        held = [connect(live) for _ in range(2)]
        try:
            for sock in held:  # both accepted and counted
                sock.sendall(get("/health/live"))
                assert Reader(sock).answer()[0].endswith("200 OK")
            with connect(live) as third:  # answered before it says anything
                status, headers, body = Reader(third).answer()
            assert status.startswith("HTTP/1.1 503") and ("Retry-After", "1") in headers
            assert "connection_limit" in json.loads(body)["error"]["message"]
        finally:
            for sock in held:
                sock.close()


# ---- light predictions answered on the loop, as front processes run them --------------------
class LoopSpy:
    """The app, noting the targets of the requests answered on the loop without a thread."""

    def __init__(self, app):
        self.app = app
        self.answered: list[str] = []

    def __getattr__(self, name):
        return getattr(self.app, name)

    def __call__(self, environ, start_response):
        return self.app(environ, start_response)

    async def respond_on_loop(self, request, executor):
        threads = []

        class Noting(Executor):
            def submit(self, fn, /, *args, **kwargs):
                threads.append(fn)
                return executor.submit(fn, *args, **kwargs)

        answer = await self.app.respond_on_loop(request, Noting())
        if not threads:
            self.answered.append(request.environ["RAW_URI"])
        return answer


@pytest.fixture(scope="module")
def loop_routed(fronts):
    """A second asyncio front on the first server's app, answering light predictions on its loop;
    ``answered``: the targets of the requests the loop answered itself."""
    from serving.http.early_refusals import FrontGate
    from serving.http.http_server import HttpServer

    (live,) = fronts
    spy = LoopSpy(live.server.app)
    answered = spy.answered
    http = live.server.config.http
    front = HttpServer(spy, http, FrontGate(TOKEN), threads=8, answers_on_loop=True)
    front.start()
    yield front, answered
    front.drain(live.server.core.handlers)


def one_text(text: str, **fields) -> bytes:
    return json.dumps({"key": ["text"], "value": [text], **fields}).encode()


LOOP_CASES = {
    "/ernie/prediction": (one_text("good", logid=4), True),
    "/ernie/v1/prediction": (one_text("bad"), True),
    "/ernie/prediction?x=1": (one_text("__bad__"), True),
    "/ernie/prediction#two": (json.dumps({"key": ["text", "text"], "value": ["a", "b"]}).encode(), False),
    "/ernie/predict": (json.dumps({"inputs": [{"text": "good"}]}).encode(), True),
    "/nope/prediction": (one_text("good"), False),
}


def test_light_predictions_are_answered_on_the_loop_as_the_app_answers(fronts, loop_routed):
    (live,) = fronts
    front, answered = loop_routed
    for target, (body, on_loop) in LOOP_CASES.items():
        path = target.split("#")[0]
        got = []
        for port in (live.server.port, front.port):
            with socket.create_connection(("127.0.0.1", port), timeout=WITHIN_S) as sock:
                sock.settimeout(WITHIN_S)
                sock.sendall(post(path, body))
                status, headers, answer = Reader(sock).answer()
            got.append((status, sorted(h for h in headers if h[0] != "Date"), answer))
        assert got[0] == got[1], target
        assert (path in answered) == on_loop, target
        answered.clear()


def test_a_multipart_prediction_is_parsed_in_a_thread_not_on_the_loop(fronts, loop_routed):
    """A text pipeline's one input, but multipart: werkzeug's form parser, not the loop, reads it."""
    (live,) = fronts
    front, answered = loop_routed
    boundary = "b0undary"
    body = f'--{boundary}\r\nContent-Disposition: form-data; name="text"\r\n\r\ngood\r\n--{boundary}--\r\n'.encode()
    data = (
        f"POST /ernie/predict HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    got = []
    for port in (live.server.port, front.port):
        with socket.create_connection(("127.0.0.1", port), timeout=WITHIN_S) as sock:
            sock.settimeout(WITHIN_S)
            sock.sendall(data)
            status, headers, answer = Reader(sock).answer()
        got.append((status, sorted(h for h in headers if h[0] != "Date"), answer))
    assert got[0] == got[1] and got[0][0] == "HTTP/1.1 200 OK"
    assert json.loads(got[0][2])["results"][0]["label"] == "positive"
    assert "/ernie/predict" not in answered


def test_a_client_gone_while_the_loop_waits_fails_its_request(fronts, loop_routed):
    (live,) = fronts
    front, answered = loop_routed
    op = live.op("cls")
    op.released.clear()
    try:
        with socket.create_connection(("127.0.0.1", front.port), timeout=WITHIN_S) as sock:
            sock.sendall(post("/ernie/prediction", one_text("__hold__")))
            time.sleep(0.3)  # the request reaches the held op
        # the loop notices the close within a wait slice and lets go, though the op still holds it
        assert live.server.core.handlers.wait_zero(WITHIN_S)
    finally:
        op.release()
