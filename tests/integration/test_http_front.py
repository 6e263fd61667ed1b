"""Each HTTP front (``http.front``: asyncio and waitress; every test runs on both)
refuses before it buffers a body: a request with a body
and without the token (401), and one whose Content-Length is over the body
limit (413), are answered the moment their headers are complete, in the app's
JSON error shape; the limit follows reloads; headers that trickle in are cut
off by ``http.header_timeout_s``.

The real server (:class:`tests.support.live_app.LiveApp`: waitress + the Flask
app + fake ops) on 127.0.0.1, spoken to over raw sockets, so a test can send
headers and withhold the body. A socket timeout stands for "never answered":
on a front that waits for the body, the read times out and the test fails.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
import yaml

from serving.config.file_set import load_repository
from tests.support.client_fakes import text_config
from tests.support.live_app import LiveApp

TOKEN = "front-secret"
WRONG = "zq9-not-it"
LIMIT = 64 << 10
ANSWER_WITHIN_S = 15.0  # generous: the answer is immediate, the machine may be loaded
TOKEN_VARS = ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN")


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    for var in TOKEN_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module", params=["asyncio"])
def front(request) -> str:
    return str(request.param)


def on_front(config: dict, front: str) -> dict:
    config.setdefault("http", {})["front"] = front
    return config


@pytest.fixture(scope="module")
def guarded(front):
    with LiveApp(on_front(text_config(auth_token=TOKEN, max_body_size=LIMIT), front)) as live:
        yield live


# ---- raw HTTP --------------------------------------------------------------------------------
class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


def connect(live: LiveApp) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", live.server.port), timeout=ANSWER_WITHIN_S)
    sock.settimeout(ANSWER_WITHIN_S)
    return sock


def head(path: str, length: int | None, *, token: str | None = None, extra: str = "") -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: test", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def read_answer(sock: socket.socket) -> Answer:
    """One response; socket.timeout (a failed test) if none comes within ANSWER_WITHIN_S."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer (got {data!r})"
        data += chunk
    header, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = header.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of the answer"
        body += chunk
    return Answer(int(status_line.split()[1]), headers, body)


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def exact_body(size: int) -> bytes:
    """A valid Paddle request of exactly ``size`` bytes (padded with JSON whitespace)."""
    body = json.dumps({"key": ["text"], "value": ["good"]}).encode()
    return body + b" " * (size - len(body))


# ---- 401 before the body ----------------------------------------------------------------------
@pytest.mark.parametrize("length", [LIMIT - 100, 50 << 20])  # within and far over the body limit
@pytest.mark.parametrize("token", [None, WRONG])
def test_a_body_without_the_token_is_refused_401_before_it_is_sent(guarded, length, token):
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", length, token=token))  # and never the body
        answer = read_answer(sock)
        assert answer.status == 401
        assert answer.headers["www-authenticate"].startswith('Bearer realm="batchline"')
        assert answer.headers["connection"] == "close"
        assert answer.headers["content-type"] == "application/json"
        doc = answer.json()
        assert doc["err_no"] == 401 and "token" in doc["err_msg"] and doc["key"] == [] and doc["value"] == []
        assert TOKEN not in answer.body.decode() and WRONG not in answer.body.decode()
        assert closed_by_server(sock)


def test_the_front_and_the_app_refuse_alike(guarded):
    """With a body the front answers; without one (nothing to buffer) the app does: same answer."""
    answers = []
    for length in (1000, 0):
        with connect(guarded) as sock:
            sock.sendall(head("/ernie/prediction", length, token=WRONG))
            answers.append(read_answer(sock))
    front, app = answers
    assert front.status == app.status == 401
    assert front.json() == app.json()
    assert front.headers["www-authenticate"] == app.headers["www-authenticate"]


def test_the_native_route_gets_the_native_error_shape(guarded):
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/predict", 1000, token=WRONG))
        answer = read_answer(sock)
    assert answer.status == 401 and answer.json()["error"]["status"] == 401


def test_the_token_check_is_case_insensitive_on_the_scheme(guarded):
    body = exact_body(200)
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", len(body), extra=f"Authorization: bEaReR {TOKEN}\r\n") + body)
        assert read_answer(sock).status == 200


NO_BODY_PATHS = ["/health/live", "/v2/health/ready", "/metrics", "/admin/reload", "/page.css", "/pipelines"]


@pytest.mark.parametrize("path", NO_BODY_PATHS)
@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_body_to_a_path_that_takes_none_is_refused_before_it_is_sent(guarded, path, token):
    """413 from the headers (401 first where the path needs the token), the body never
    sent, so it never enters the body budget: the health probes and the admin route
    without its token included."""
    with connect(guarded) as sock:
        sock.sendall(head(path, 8 << 20, token=token))  # no body follows: the answer must not wait for it
        answer = read_answer(sock)
        needs_token = path not in ("/health/live", "/v2/health/ready", "/admin/reload")  # (no admin token set)
        assert answer.status == (401 if token is None and needs_token else 413), answer.body
        assert answer.headers["connection"] == "close" and closed_by_server(sock)
    with connect(guarded) as sock:  # without a body the path answers as before
        sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: test\r\n\r\n")
        assert read_answer(sock).status == 200


def test_a_tiny_body_to_a_health_probe_is_refused_too(guarded):
    with connect(guarded) as sock:
        sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
        answer = read_answer(sock)
        assert answer.status == 413 and "/health/live takes no request body" in answer.body.decode()


# ---- 413 before the body ----------------------------------------------------------------------
def test_content_length_over_the_limit_is_413_at_once_and_the_limit_itself_is_served(guarded):
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", LIMIT + 1, token=TOKEN))  # no body follows
        answer = read_answer(sock)
        assert answer.status == 413 and answer.headers["connection"] == "close"
        assert answer.json()["err_no"] == 413 and f"max_body_size ({LIMIT} bytes)" in answer.json()["err_msg"]
        assert closed_by_server(sock)
    body = exact_body(LIMIT)  # exactly the limit: served (waitress refuses at >= its own setting)
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body)
        assert read_answer(sock).status == 200


def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives_in_json(guarded):
    chunk = b"x" * 16384
    frames = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(LIMIT // len(chunk) + 2))
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", None, token=TOKEN, extra="Transfer-Encoding: chunked\r\n"))
        try:
            sock.sendall(frames)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while sending: the answer was written first
        answer = read_answer(sock)
    assert answer.status == 413 and "max_body_size" in answer.json()["err_msg"]


@pytest.mark.parametrize("token, status", [(WRONG, 401), (TOKEN, 413)])
def test_a_client_that_sends_the_refused_body_anyway_still_reads_the_answer(guarded, token, status):
    """The body is read and dropped after the answer (not buffered), so the
    client's upload completes instead of being reset, and it sees the answer."""
    body = b"x" * (8 << 20)
    with connect(guarded) as sock:
        sock.sendall(head("/ernie/prediction", len(body), token=token) + body)
        answer = read_answer(sock)
        assert answer.status == status
        assert closed_by_server(sock)


# ---- the limit follows reloads ----------------------------------------------------------------
def test_a_reload_changes_the_limit_the_front_refuses_at(tmp_path: Path, front):
    path = tmp_path / "ernie.yml"
    config = on_front(text_config(auth_token=TOKEN, max_body_size=LIMIT), front)
    path.write_text(yaml.safe_dump(config))
    with LiveApp(load_repository([str(path)])) as live:
        with connect(live) as sock:
            sock.sendall(head("/ernie/prediction", 100_000, token=TOKEN))
            assert read_answer(sock).status == 413
        config["op"]["cls"]["local_service_conf"]["max_body_size"] = 200_000
        path.write_text(yaml.safe_dump(config))
        live.repository.reload()
        body = exact_body(150_000)
        with connect(live) as sock:
            sock.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body)
            assert read_answer(sock).status == 200
        with connect(live) as sock:
            sock.sendall(head("/ernie/prediction", 200_001, token=TOKEN))
            answer = read_answer(sock)
        assert answer.status == 413 and "max_body_size (200000 bytes)" in answer.json()["err_msg"]


# ---- the header deadline ----------------------------------------------------------------------
HEADER_TIMEOUT_S = 0.5
REQUEST_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def deadlines(front):
    config = text_config()
    config["http"] = {"header_timeout_s": HEADER_TIMEOUT_S, "request_timeout_s": REQUEST_TIMEOUT_S, "front": front}
    with LiveApp(config) as live:
        yield live


def trickle(sock: socket.socket, data: bytes, until_s: float) -> float | None:
    """Send ``data`` a byte every 50 ms; seconds until the server closed the connection (None: it did not)."""
    began = time.monotonic()
    sock.settimeout(0.05)
    for byte in data:
        if time.monotonic() - began > until_s:
            return None
        try:
            sock.sendall(bytes([byte]))
            if sock.recv(1) == b"":
                return time.monotonic() - began
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - began
    return None


def test_headers_trickling_past_the_header_deadline_are_cut_off(deadlines):
    with connect(deadlines) as sock:
        sock.sendall(b"POST /ernie/prediction HTTP/1.1\r\nHost: test\r\n")
        closed_after = trickle(sock, b"X-Slow: " + b"a" * 2000 + b"\r\n\r\n", until_s=30)
    # closed by the header deadline (checked every 0.5 s), long before the request deadline
    assert closed_after is not None and HEADER_TIMEOUT_S <= closed_after < 30


def test_a_body_slower_than_the_header_deadline_is_still_served(deadlines):
    body = json.dumps({"key": ["text"], "value": ["good"]}).encode()
    with connect(deadlines) as sock:
        sock.sendall(head("/ernie/prediction", len(body)))
        for i in range(0, len(body), 8):  # the body over ~2 s: 4x the header deadline
            sock.sendall(body[i : i + 8])
            time.sleep(4 * HEADER_TIMEOUT_S * 8 / len(body))
        sock.settimeout(ANSWER_WITHIN_S)
        assert read_answer(sock).status == 200


# ---- the body budget (http.max_buffered_mb) ----------------------------------------------------
BUDGET_MB = 2
BUDGETED_LIMIT = BUDGET_MB << 20  # one body of the limit fits the budget, two of 60% do not
SHARE = int(0.6 * BUDGETED_LIMIT)  # past waitress's 512 KiB: stored in a temp file


@pytest.fixture(scope="module")
def budgeted(front):
    config = text_config(auth_token=TOKEN, max_body_size=BUDGETED_LIMIT)
    config["http"] = {"max_buffered_mb": BUDGET_MB, "front": front}
    with LiveApp(config) as live:
        yield live


def held_becomes(live: LiveApp, nbytes: int) -> None:
    """Wait until the budget holds ``nbytes`` (a request gives its body back just after its answer)."""
    budget = live.server.body_budget
    end = time.monotonic() + ANSWER_WITHIN_S
    while budget.held != nbytes:
        assert time.monotonic() < end, f"the budget holds {budget.held} bytes, not {nbytes}"
        time.sleep(0.01)


def start_upload(live: LiveApp, body: bytes) -> socket.socket:
    """A connection that sent the headers and half of ``body`` (its claim is taken) and waits."""
    sock = connect(live)
    sock.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body[: len(body) // 2])
    return sock


def finish_upload(sock: socket.socket, body: bytes) -> Answer:
    sock.sendall(body[len(body) // 2 :])
    return read_answer(sock)


def test_the_budget_is_the_key_or_four_bodies_of_the_limit(guarded, budgeted):
    assert budgeted.server.body_budget.capacity == BUDGET_MB << 20
    assert guarded.server.body_budget.capacity == 4 * LIMIT  # http.max_buffered_mb: null


def test_a_body_that_does_not_fit_the_budget_is_503_before_it_is_sent(budgeted):
    held_becomes(budgeted, 0)
    body = exact_body(SHARE)
    with start_upload(budgeted, body) as first:
        held_becomes(budgeted, SHARE)
        with connect(budgeted) as second:
            second.sendall(head("/ernie/prediction", SHARE, token=TOKEN))  # and never the body
            answer = read_answer(second)
            assert answer.status == 503 and answer.headers["retry-after"] == "1"
            assert answer.headers["connection"] == "close" and answer.headers["content-type"] == "application/json"
            doc = answer.json()
            assert doc["err_no"] == 503 and "http.max_buffered_mb" in doc["err_msg"] and doc["value"] == []
            assert closed_by_server(second)
        assert finish_upload(first, body).status == 200
    held_becomes(budgeted, 0)  # given back once answered: the next such body fits
    with connect(budgeted) as third:
        third.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body)
        assert read_answer(third).status == 200
    held_becomes(budgeted, 0)


def test_a_request_the_app_refuses_gives_its_body_back(budgeted):
    held_becomes(budgeted, 0)
    body = b"{" + b" " * (SHARE - 1)  # not JSON: the app answers 400 after the body is stored
    for _ in range(3):  # a leak would lock out the third
        with connect(budgeted) as sock:
            sock.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body)
            assert read_answer(sock).status == 400
        held_becomes(budgeted, 0)


def test_a_client_gone_mid_body_gives_its_claim_back(budgeted):
    held_becomes(budgeted, 0)
    body = exact_body(SHARE)
    for _ in range(2):  # a leak would lock out the second
        with start_upload(budgeted, body):
            held_becomes(budgeted, SHARE)
        held_becomes(budgeted, 0)  # closed mid-body: waitress never answers nor closes that request
    with connect(budgeted) as sock:
        sock.sendall(head("/ernie/prediction", len(body), token=TOKEN) + body)
        assert read_answer(sock).status == 200
    held_becomes(budgeted, 0)


@pytest.mark.parametrize(
    "token, length, status",
    [(WRONG, SHARE, 401), (TOKEN, BUDGETED_LIMIT + 1, 413), (TOKEN, SHARE, 503)],
)
def test_a_refused_request_takes_nothing_and_frees_nothing_of_others(budgeted, token, length, status):
    held_becomes(budgeted, 0)
    body = exact_body(SHARE)
    with start_upload(budgeted, body) as first:
        held_becomes(budgeted, SHARE)
        for _ in range(3):
            with connect(budgeted) as sock:
                sock.sendall(head("/ernie/prediction", length, token=token))
                assert read_answer(sock).status == status
                assert closed_by_server(sock)
        held_becomes(budgeted, SHARE)  # the first's claim, no more and no less
        assert finish_upload(first, body).status == 200
    held_becomes(budgeted, 0)


def test_a_chunked_body_claims_as_it_arrives(budgeted):
    held_becomes(budgeted, 0)
    chunk = b" " * 16384
    payload = json.dumps({"key": ["text"], "value": ["good"]}).encode()
    frames = b"%x\r\n%s\r\n" % (len(payload), payload)
    frames += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(SHARE // len(chunk)))
    frames += b"0\r\n\r\n"
    chunked = head("/ernie/prediction", None, token=TOKEN, extra="Transfer-Encoding: chunked\r\n")
    body = exact_body(SHARE)
    with start_upload(budgeted, body) as first:
        held_becomes(budgeted, SHARE)
        with connect(budgeted) as sock:
            sock.sendall(chunked)
            try:
                sock.sendall(frames)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused while sending: the answer was written first
            answer = read_answer(sock)
        assert answer.status == 503 and "http.max_buffered_mb" in answer.json()["err_msg"]
        held_becomes(budgeted, SHARE)
        assert finish_upload(first, body).status == 200
    held_becomes(budgeted, 0)
    with connect(budgeted) as sock:  # alone, it fits
        sock.sendall(chunked + frames)
        assert read_answer(sock).status == 200
    held_becomes(budgeted, 0)
