"""What the asyncio front hands the app and puts on the wire (serving.http.wsgi_call):
waitress's environ rules, and the answer's framing headers."""

from __future__ import annotations

from serving.http.wsgi_call import CLIENT_GONE, DateHeader, HttpAnswer, HttpRequest, answer_bytes, call_app, environ_of


def request(**kw) -> HttpRequest:
    fields = {"method": "POST", "target": b"/a%20b/predict?x=1", "version": "1.1", "headers": []}
    fields.update(kw)
    return HttpRequest(**fields)


def test_the_environ_is_waitresss():
    env = environ_of(
        request(
            headers=[
                (b"Content-Type", b"application/json"),
                (b"X-Thing", b"a"),
                (b"x-thing", b"b"),
                (b"Authorization", b"Bearer t"),
            ],
            body=b"{}",
            remote=("10.0.0.1", 5555),
            server=("127.0.0.1", 8080),
        ),
        "batchline",
    )
    assert env["PATH_INFO"] == "/a b/predict" and env["QUERY_STRING"] == "x=1"
    assert env["REQUEST_URI"] == "/a%20b/predict?x=1" and env["SCRIPT_NAME"] == ""
    assert env["CONTENT_TYPE"] == "application/json" and env["CONTENT_LENGTH"] == "2"
    assert env["HTTP_X_THING"] == "a, b"  # repeated headers joined, as waitress does
    assert env["HTTP_AUTHORIZATION"] == "Bearer t"
    assert env["REMOTE_ADDR"] == "10.0.0.1" and env["SERVER_PORT"] == "8080"
    assert env["SERVER_PROTOCOL"] == "HTTP/1.1" and env["wsgi.input"].read() == b"{}"


def test_underscored_and_proxy_headers_never_reach_the_app():
    env = environ_of(
        request(headers=[(b"X_Auth", b"spoof"), (b"X-Forwarded-For", b"1.2.3.4"), (b"Forwarded", b"for=x")]),
        "batchline",
    )
    assert not any(k in env for k in ("HTTP_X_AUTH", "HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED"))


def test_an_absolute_target_is_served_by_its_path():
    env = environ_of(request(target=b"http://example.com/ernie/predict?q=2"), "batchline")
    assert env["PATH_INFO"] == "/ernie/predict" and env["QUERY_STRING"] == "q=2"


def test_the_client_gone_check_reaches_the_app():
    env = environ_of(request(disconnected=lambda: True), "batchline")
    assert env[CLIENT_GONE]() is True


def test_the_app_answer_is_read_whole_and_closed():
    closed = []

    class Body(list):
        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("201 Created", [("Content-Type", "text/plain")])
        return Body([b"a", b"b"])

    answer = call_app(app, {})
    assert (answer.status, answer.body, closed) == ("201 Created", b"ab", [True])


def test_an_app_that_fails_or_never_starts_is_a_500():
    def broken(environ, start_response):
        raise RuntimeError("boom")

    def silent(environ, start_response):
        return [b"x"]

    assert call_app(broken, {}).status.startswith("500")
    assert call_app(silent, {}).status.startswith("500")


def parse(data: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    return status, dict(line.split(": ", 1) for line in lines), body


def test_the_answer_gets_length_date_and_server():
    data, keep = answer_bytes(
        HttpAnswer("200 OK", [("Content-Type", "application/json")], b"{}"),
        version="1.1",
        keep_alive=True,
        head=False,
        ident="batchline",
        date="D",
    )
    status, headers, body = parse(data)
    assert status == "HTTP/1.1 200 OK" and body == b"{}" and keep
    assert headers == {"Content-Type": "application/json", "Content-Length": "2", "Date": "D", "Server": "batchline"}


def test_connection_headers_follow_the_version_and_the_app():
    ok = HttpAnswer("200 OK", [], b"x")
    closing = HttpAnswer("200 OK", [("Connection", "close")], b"x")
    kw = {"head": False, "ident": "b", "date": "D"}
    assert parse(answer_bytes(ok, version="1.1", keep_alive=False, **kw)[0])[1]["Connection"] == "close"
    assert parse(answer_bytes(ok, version="1.0", keep_alive=True, **kw)[0])[1]["Connection"] == "Keep-Alive"
    assert parse(answer_bytes(ok, version="1.0", keep_alive=False, **kw)[0])[1]["Connection"] == "close"
    data, keep = answer_bytes(closing, version="1.1", keep_alive=True, **kw)
    assert not keep and parse(data)[1]["Connection"] == "close"


def test_a_head_answer_has_no_body_but_the_length_of_one():
    answer = HttpAnswer("200 OK", [("Content-Length", "5")], b"")
    data, _ = answer_bytes(answer, version="1.1", keep_alive=True, head=True, ident="b", date="D")
    assert parse(data)[1]["Content-Length"] == "5" and data.endswith(b"\r\n\r\n")


def test_the_date_is_formatted_once_a_second():
    now = [1_700_000_000.2]
    date = DateHeader(lambda: now[0])
    first = date()
    now[0] += 0.5
    assert date() is first
    now[0] += 1
    assert date() != first and date().endswith("GMT")
