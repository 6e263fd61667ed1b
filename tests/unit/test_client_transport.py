"""The client's transport (client/transport.py): proxies from the environment,
answers read in full, kept-alive connections reused and a closed one noticed,
and no answer -> TransportError, a timeout told apart. Against real sockets on
127.0.0.1, no server code."""

from __future__ import annotations

import socket
import threading

import pytest

from client.transport import Transport, TransportError, _proxy_for


def test_proxy_from_the_environment_unless_the_host_is_bypassed(monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _proxy_for("http://10.0.0.5:9999") is None
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    assert _proxy_for("http://10.0.0.5:9999") == "http://proxy.example:3128"
    assert _proxy_for("https://10.0.0.5:9999") is None  # only https_proxy serves https
    monkeypatch.setenv("no_proxy", "10.0.0.5")
    assert _proxy_for("http://10.0.0.5:9999") is None


def _one_answer_server(answer: bytes) -> tuple[socket.socket, list[bytes]]:
    """A socket that reads one request and sends ``answer`` (nothing when empty), then keeps the connection."""
    srv = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = srv.accept()
        received.append(conn.recv(65536))
        if answer:
            conn.sendall(answer)
        threading.Event().wait(2)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, received


def test_an_answer_is_read_in_full_with_its_headers(monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    body = '{"ok": "中"}'.encode()
    srv, received = _one_answer_server(
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    with srv:
        t = Transport(f"http://127.0.0.1:{srv.getsockname()[1]}", pool_size=1, headers={"Authorization": "Bearer x"})
        answer = t.request("POST", "/p", body=b"{}", headers={"Content-Type": "application/json"}, timeout=5)
        t.close()
    assert (answer.status_code, answer.headers["retry-after"], answer.json()) == (503, "2", {"ok": "中"})
    assert answer.headers.get("Retry-After") == "2"
    assert answer.text == '{"ok": "中"}' and answer.reason == "Service Unavailable"
    request = received[0]
    assert request.startswith(b"POST /p HTTP/1.1") and b"Authorization: Bearer x" in request


def test_no_answer_in_time_is_a_timeout(monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    srv, _ = _one_answer_server(b"")
    with srv:
        t = Transport(f"http://127.0.0.1:{srv.getsockname()[1]}", pool_size=1)
        with pytest.raises(TransportError) as info:
            t.request("GET", "/", timeout=0.3)
    assert info.value.timed_out and "timed out" in str(info.value)


def test_nobody_listening_is_no_timeout(monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(TransportError) as info:
        Transport(f"http://127.0.0.1:{port}", pool_size=1).request("GET", "/", timeout=2)
    assert not info.value.timed_out and "cannot reach" in str(info.value)


def test_closing_drops_connections_but_the_transport_still_works(monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    srv, _ = _one_answer_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    with srv:
        t = Transport(f"http://127.0.0.1:{srv.getsockname()[1]}", pool_size=1)
        t.close()
        assert t.request("GET", "/", timeout=5).content == b"ok"
        t.close()


def test_a_kept_alive_connection_is_reused_and_one_the_server_closed_is_replaced(monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    srv = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        for keep in (True, False):  # the first connection answers twice; the server then closes it
            conn, _ = srv.accept()
            accepted.append(1)
            for _ in range(2 if keep else 1):
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    with srv:
        t = Transport(f"http://127.0.0.1:{srv.getsockname()[1]}", pool_size=1)
        assert t.request("GET", "/a", timeout=5).content == b"ok"
        assert t.request("GET", "/b", timeout=5).content == b"ok"  # the same connection
        assert len(accepted) == 1
        threading.Event().wait(0.2)  # the server has closed it meanwhile
        assert t.request("GET", "/c", timeout=5).content == b"ok"  # noticed: a new connection
        assert len(accepted) == 2
        t.close()
