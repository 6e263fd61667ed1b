"""The Ray backend's HTTP ingress (:class:`serving.rayserve.ingress.Ingress`, its
Flask app run through :mod:`serving.rayserve.wsgi_bridge`) over HTTP, without Ray.

The ingress is the real class, called as Ray Serve's proxy calls it (an ASGI
request, here from Starlette's TestClient); its op deployments are
:class:`tests.support.ray_fakes.FakeHandle` s whose replicas are real
:class:`serving.rayserve.op_replica.OpReplica` s in this process, and
``serve.status()`` is a fake whose replica counts the test sets. Its answers
are compared with the single-process server's (the same Flask app over a
normal :class:`PipelineRepository`) for the same configs.

Every wait has a generous limit that only guards against a hang.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from ray.exceptions import ActorDiedError
from starlette.requests import Request

from serving.batching.live_pipelines import PipelineRepository
from serving.config.documents import ConfigDocument, parse_documents
from serving.http.app import create_app
from serving.rayserve.ingress import RELOAD_ON_RAY
from serving.rayserve.wire import OpCall, OpReply
from serving.rayserve.wsgi_bridge import wsgi_environ
from tests.support.ray_fakes import (
    HANG_GUARD_S,
    RAY_FAKES,
    FakeHandle,
    document,
    four_times,
    gate,
    op_conf,
    split_add,
)
from tests.support.ray_ingress import Body, RayApps, call, isolate, scope

TOKEN = "t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AUTH_HEADER = (b"authorization", f"Bearer {TOKEN}".encode())


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def ray_app() -> Iterator[Any]:
    with RayApps() as make:
        yield make


@pytest.fixture
def local_app() -> Iterator[Any]:
    """The single-process server's app for the same documents (Flask's test client)."""
    repos: list[PipelineRepository] = []

    def make(documents: list[ConfigDocument]) -> Any:
        repos.append(PipelineRepository(parse_documents(documents), warmup=False))
        repos[-1].start()
        return create_app(repos[-1], auth_token=parse_documents(documents).auth_token).test_client()

    yield make
    for repo in repos:
        repo.shutdown()


DOCS = [
    document("p", split_add(), auth_token=TOKEN),
    document("q", {"x": op_conf("TextSplitOp", share="s"), "add": op_conf("AddOp", ["x"])}, auth_token=TOKEN),
    document("r", {"y": op_conf("TextSplitOp", share="s")}, auth_token=TOKEN),
]


def native(client: Any, name: str, text: str) -> Any:
    return client.post(f"/{name}/predict", content=text.encode(), headers={**AUTH, "Content-Type": "text/plain"})


def paddle(client: Any, name: str, texts: list[str]) -> Any:
    body = json.dumps({"key": ["text"] * len(texts), "value": texts, "logid": 42})
    return client.post(f"/{name}/prediction", content=body.encode(), headers=AUTH)


def flask_native(client: Any, name: str, text: str) -> Any:
    return client.post(f"/{name}/predict", data=text.encode(), headers={**AUTH, "Content-Type": "text/plain"})


def flask_paddle(client: Any, name: str, texts: list[str]) -> Any:
    body = json.dumps({"key": ["text"] * len(texts), "value": texts, "logid": 42})
    return client.post(f"/{name}/prediction", data=body.encode(), headers=AUTH)


def test_answers_are_the_single_process_servers(ray_app, local_app):
    ray, local = ray_app(DOCS).client, local_app(DOCS)
    for name in ("p", "q", "r"):
        for text in ("7 3", "5 0"):
            got, want = native(ray, name, text), flask_native(local, name, text)
            assert (got.status_code, got.json()) == (want.status_code, want.get_json()) == (200, want.get_json())
        got, want = paddle(ray, name, ["1 2", "2 1"]), flask_paddle(local, name, ["1 2", "2 1"])
        assert (got.status_code, got.json()) == (want.status_code, want.get_json())
        assert got.json()["err_no"] == 0
    assert native(ray, "p", "7 3").json() == {"results": [four_times(7, 3)]}
    assert native(ray, "q", "2 2").json() == {"results": [four_times(2, 2)]}


def test_errors_keep_their_status_and_message(ray_app, local_app):
    ray, local = ray_app(DOCS).client, local_app(DOCS)
    bad_ray, bad_local = native(ray, "p", "not numbers"), flask_native(local, "p", "not numbers")
    assert bad_ray.status_code == bad_local.status_code == 400
    assert bad_ray.json() == bad_local.get_json()
    assert "expected two integers" in bad_ray.text
    paddle_ray = paddle(ray, "p", ["x"])
    assert paddle_ray.status_code == 400 and paddle_ray.json()["err_no"] == 400
    assert native(ray, "nope", "1 1").status_code == 404
    assert ray.post("/p/predict", content=b"7 3", headers={"Content-Type": "text/plain"}).status_code == 401


def test_health_and_readiness_follow_the_op_deployments(ray_app):
    app = ray_app(DOCS)
    client = app.client
    assert client.get("/health/live").status_code == 200
    assert client.get("/health/ready").status_code == 200
    app.cluster.running["shared-s"] = 0  # e.g. its node was lost, the replacement not up yet
    app.ingress._health.poll()
    assert client.get("/health/ready").status_code == 503
    assert client.get("/v2/health/ready").status_code == 503
    assert client.get("/health/live").status_code == 200
    app.cluster.running["shared-s"] = 2
    app.ingress._health.poll()
    assert client.get("/health/ready").status_code == 200


def test_readiness_answers_at_once_before_the_op_replicas_run(ray_app):
    """Ray routes to the ingress as soon as its own replica runs, while the op replicas may still
    load or wait for room, and Serve's controller may be slow to answer: /health/ready is 503
    (JSON) at once until a poll saw every op deployment running, never 200 on no news."""
    silent = threading.Event()  # serve.status() that does not answer (a busy controller)
    began = time.monotonic()
    app = ray_app(DOCS, status=lambda: silent.wait(HANG_GUARD_S) and None)
    assert time.monotonic() - began < 10  # the ingress starts without waiting for the controller
    try:
        began = time.monotonic()
        answer = app.client.get("/health/ready")
        assert time.monotonic() - began < 2
        assert answer.status_code == 503 and answer.json() == {"status": "not ready"}
        assert app.client.get("/health/live").status_code == 200
    finally:
        silent.set()
    app.cluster.running = dict.fromkeys(app.cluster.running, 0)  # every op replica still loading
    app.ingress._health._status = app.cluster.status
    app.ingress._health.poll()
    assert app.client.get("/health/ready").status_code == 503
    app.cluster.running = dict.fromkeys(app.cluster.running, 1)
    app.ingress._health.poll()
    assert app.client.get("/health/ready").status_code == 200


def test_metrics_label_samples_with_the_replica(ray_app):
    client = ray_app(DOCS).client
    assert native(client, "p", "1 1").status_code == 200
    text = client.get("/metrics", headers=AUTH).text
    assert 'batchline_requests_total{pipeline="p",replica="ingress-' in text
    assert "# TYPE batchline_requests_total counter" in text


def test_reload_is_refused_on_ray(ray_app):
    # with the admin token: the reload itself is refused; without one set, admin routes are (403)
    client = ray_app([document("p", split_add(), auth_token=TOKEN, admin_token="adm1n")]).client
    answer = client.post("/admin/reload", headers={"Authorization": "Bearer adm1n"})
    assert answer.status_code == 409
    assert RELOAD_ON_RAY in answer.text
    assert client.post("/admin/reload", headers=AUTH).status_code == 401
    assert ray_app(DOCS).client.post("/admin/reload", headers=AUTH).status_code == 403


class Dying:
    """A replica that is lost on every call."""

    async def run(self, call: OpCall) -> OpReply:
        raise ActorDiedError()


def test_a_lost_replica_is_503_with_retry_after_over_http(ray_app):
    app = ray_app([document("p", split_add())], replace={"p-add": FakeHandle(Dying())})
    answer = native(app.client, "p", "1 1")
    assert answer.status_code == 503
    assert float(answer.headers["Retry-After"]) > 0
    assert "replica was lost" in answer.text


def test_a_route_prefix_becomes_the_script_root(ray_app):
    client = ray_app([document("p", split_add())], root_path="/ocr").client
    answer = native(client, "ocr/p", "7 3")  # Ray's proxy: path /ocr/p/predict, root_path /ocr
    assert (answer.status_code, answer.json()) == (200, {"results": [four_times(7, 3)]})
    assert client.get("/ocr/health/ready").status_code == 200


@pytest.mark.parametrize(
    ("path", "root", "script", "path_info"),
    [
        ("/ocr/p/predict", "/ocr", "/ocr", "/p/predict"),  # ASGI: path includes root_path
        ("/p/predict", "/ocr", "/ocr", "/p/predict"),  # older servers: it does not
        ("/ocr", "/ocr", "/ocr", "/"),
        ("/p/predict", "", "", "/p/predict"),
    ],
)
def test_wsgi_environ_of_an_asgi_request(path, root, script, path_info):
    request = Request(scope(path, root, b"timeout_ms=5", [(b"content-type", b"text/plain"), (b"x-key", b"k")]))
    environ = wsgi_environ(request, b"7 3")
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"]) == (script, path_info)
    assert environ["QUERY_STRING"] == "timeout_ms=5"
    assert environ["REQUEST_METHOD"] == "POST"
    assert (environ["CONTENT_TYPE"], environ["CONTENT_LENGTH"]) == ("text/plain", "3")
    assert environ["wsgi.input"].read() == b"7 3"
    assert environ["HTTP_X_KEY"] == "k"
    assert environ["REMOTE_ADDR"] == "10.0.0.7"


def test_a_request_the_client_abandons_cancels_its_op_call(ray_app):
    """Ray's proxy cancels the ingress call when the client goes away: the request
    fails at once and its pending op call is cancelled, as under waitress."""
    held = gate("ingress-abandon")
    ops = {"echo": op_conf("GateOp", params={"gate": "ingress-abandon"}, module=RAY_FAKES)}
    # a deadline far beyond the hang guard: only the abandonment can end the request in time
    app = ray_app([document("g", ops, dag={"request_timeout_ms": 600_000, "max_queue_size": 32})])
    handle = app.handles["g-echo"]
    pipeline = app.ingress.repository.pipeline("g")

    async def body() -> dict[str, Any]:
        return {"type": "http.request", "body": b"abc", "more_body": False}

    async def abandon() -> None:
        request = Request(scope("/g/predict", headers=[(b"content-type", b"text/plain")]), body)
        call = asyncio.ensure_future(app.ingress(request))
        assert await asyncio.to_thread(held.entered.wait, HANG_GUARD_S), "the op never got the request"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    try:
        asyncio.run(abandon())
        end = time.monotonic() + HANG_GUARD_S
        while not (handle.responses and handle.responses[0].cancelled and pipeline.in_flight == 0):
            assert time.monotonic() < end, "the abandoned request still runs"
            time.sleep(0.01)
    finally:
        held.go.set()


# ----------------------------------------------------------------------------- hostile requests


LIMIT = 1000  # max_body_size of the pipeline below: a small limit keeps the chunked case short
GATED = [document("p", split_add(max_body_size=LIMIT), auth_token=TOKEN)]


def endless() -> Iterable[bytes]:
    """A client that sends far more than the limit, one byte a message (bounded, so that an
    ingress that reads everything fails this test instead of hanging it)."""
    return itertools.repeat(b"7", 50 * LIMIT)


@pytest.mark.parametrize("path", ["/p/predict", "/p/prediction"])
@pytest.mark.parametrize("authorization", [None, b"Bearer wrong", b"Basic dDBrZW4="], ids=["none", "wrong", "basic"])
def test_a_body_without_the_token_is_refused_unread(ray_app, local_app, path, authorization):
    """401 before any byte of a large declared body is pulled; the answer is the app's own."""
    app = ray_app(GATED)
    body = Body(endless())
    headers = [(b"content-length", b"900")]
    if authorization is not None:
        headers.append((b"authorization", authorization))
    answer = call(app, path, body, headers)
    assert answer.status_code == 401
    assert body.pulled == 0, "the ingress read the body of a request it refused"
    assert answer.headers["www-authenticate"].startswith('Bearer realm="batchline"')
    assert answer.headers["connection"] == "close"
    sent = {} if authorization is None else {"Authorization": authorization.decode()}
    flask = local_app(GATED).post(path, data=b"7 3", headers={**sent, "Content-Type": "text/plain"})
    got, want = json.loads(answer.body), flask.get_json()
    assert answer.status_code == flask.status_code
    # the app's shape and status; its message (FrontGate's wording, which may name less) aside
    got_message = got.pop("err_msg", None) or got["error"].pop("message")
    want.pop("err_msg", None) or want["error"].pop("message")
    assert got == want and got_message.startswith("missing or wrong bearer token")
    assert answer.headers["www-authenticate"] == flask.headers["WWW-Authenticate"]
    assert TOKEN not in answer.body.decode()


def test_a_content_length_over_the_limit_is_413_unread(ray_app):
    body = Body(endless())
    answer = call(ray_app(GATED), "/p/predict", body, [(b"content-length", b"%d" % (LIMIT + 1)), AUTH_HEADER])
    assert answer.status_code == 413
    assert body.pulled == 0
    assert json.loads(answer.body) == {
        "error": {"status": 413, "message": f"request body over max_body_size ({LIMIT} bytes)"}
    }


def test_a_chunked_body_past_the_limit_is_413_after_at_most_limit_plus_one_bytes(ray_app):
    """No length up front: read one chunk at a time, refused as soon as it is past the limit."""
    app = ray_app(GATED)
    body = Body(endless())
    answer = call(app, "/p/prediction", body, [(b"transfer-encoding", b"chunked"), AUTH_HEADER])
    assert answer.status_code == 413 and json.loads(answer.body)["err_no"] == 413
    assert body.bytes == LIMIT + 1
    within = Body([b"7", b" ", b"3"])  # chunked, within the limit: answered as usual
    answer = call(app, "/p/predict", within, [(b"transfer-encoding", b"chunked"), AUTH_HEADER])
    assert (answer.status_code, json.loads(answer.body)) == (200, {"results": [four_times(7, 3)]})


def test_a_bad_content_length_is_400_unread(ray_app):
    body = Body(endless())
    answer = call(ray_app(GATED), "/p/predict", body, [(b"content-length", b"-5"), AUTH_HEADER])
    assert answer.status_code == 400 and body.pulled == 0


def test_requests_without_a_body_are_the_apps_to_judge(ray_app):
    """Probes and the page carry no body and need no token: the front leaves them to the app."""
    client = ray_app(GATED).client
    assert client.get("/health/live").status_code == 200
    assert client.get("/", headers={"Accept": "text/html"}).status_code == 200
    refused = client.get("/pipelines")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == 'Bearer realm="batchline"'


def test_an_ingress_exposed_without_a_token_refuses_to_start(ray_app, monkeypatch):
    """Its proxies listen beyond loopback and its environment has no token: no replica starts
    (Serve reports the message). A token from the environment, as a Secret gives it, serves."""
    from serving.service.exposure import OpenBindRefused

    open_docs = [document("p", split_add())]
    with pytest.raises(OpenBindRefused, match="BATCHLINE_AUTH_TOKEN"):
        ray_app(open_docs, http_host="0.0.0.0")
    assert ray_app(open_docs, http_host="127.0.0.1").client.get("/pipelines").status_code == 200
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", TOKEN)
    client = ray_app(open_docs, http_host="0.0.0.0").client
    assert client.get("/pipelines").status_code == 401
    assert native(client, "p", "7 3").json() == {"results": [four_times(7, 3)]}
