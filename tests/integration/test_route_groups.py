"""Each route group of ``serving.http.routes`` built alone on a bare app
from a :class:`RouteContext` around a fake text pipeline: no page, no access
check, no other group. The whole app's contract is tests/integration/test_http_*.py."""

from __future__ import annotations

import json

import pytest
from werkzeug.wrappers import Response

from serving.batching.live_pipelines import PipelineRepository
from serving.config.file_set import repository_of
from serving.errors import Conflict
from serving.http.app import HttpApp
from serving.http.routes import errors, operations, prediction
from tests.support.http_fakes import echo_pipeline, route_context


def bare_app(*groups, ctx):
    app = HttpApp(ctx.core)
    for group in groups:
        group.register(app, ctx)
    return app.test_client()


@pytest.fixture
def repo():
    config = repository_of(echo_pipeline().config)
    repository = PipelineRepository(config, loader=lambda sources: config, warmup=False)
    repository.start()
    yield repository
    repository.shutdown(timeout=5)


def test_prediction_group_alone(repo):
    client = bare_app(prediction, ctx=route_context(repo))
    body = {"key": ["text", "text"], "value": ["hi", "héllo"], "logid": 3}
    r = client.post("/echo/prediction", data=json.dumps(body))
    assert r.status_code == 200
    answer = r.get_json()
    assert {k: answer[k] for k in ("err_no", "err_msg", "key", "logid")} == {
        "err_no": 0,
        "err_msg": "",
        "key": ["result", "result"],
        "logid": 3,
    }
    assert [json.loads(v) for v in answer["value"]] == [
        {"text": "hi", "double_len": 4},
        {"text": "héllo", "double_len": 10},
    ]
    r = client.post("/echo/v1/predict", json={"inputs": [{"text": "abc"}]})
    assert r.status_code == 200 and r.get_json() == {"results": [{"text": "abc", "double_len": 6}], "version": 1}


def test_prediction_group_answers_a_paddle_failure_itself_and_releases_the_decode_budget(repo):
    ctx = route_context(repo)
    client = bare_app(prediction, ctx=ctx)
    r = client.post("/echo/prediction", data=json.dumps({"key": ["text"], "value": ["boom"], "logid": 9}))
    assert r.status_code == 500
    assert r.get_json()["err_no"] != 0 and r.get_json()["logid"] == 9
    assert ctx.core.decode_budget.in_use == 0


def test_errors_group_answers_every_groups_failures_in_json(repo):
    client = bare_app(errors, prediction, ctx=route_context(repo))
    r = client.post("/nope/predict", json={"inputs": [{"text": "x"}]})
    assert r.status_code == 404 and r.get_json()["error"]["message"] == "unknown pipeline 'nope'; this server runs echo"
    r = client.get("/no/such/route/at/all")
    assert r.status_code == 404 and "pipelines: echo" in r.get_json()["error"]["message"]
    r = client.post("/echo/predict", json={"inputs": [{"text": "a"}] * 5})  # max_inputs_per_request: 4
    assert r.status_code == 413 and r.get_json()["error"]["status"] == 413


def test_errors_group_turns_an_unexpected_exception_into_a_500():
    ctx = route_context(PipelineRepository.of(echo_pipeline()))
    app = HttpApp(ctx.core)
    errors.register(app, ctx)

    def fails(request) -> Response:
        raise RuntimeError("bug")

    def busy(request) -> Response:
        raise Conflict("a reload is already running")

    app.add_url_rule("/fails", "fails", fails, methods=["GET"])
    app.add_url_rule("/busy", "busy", busy, methods=["GET"])

    assert app.test_client().get("/fails").get_json()["error"]["status"] == 500
    r = app.test_client().get("/busy")
    assert r.status_code == 409 and r.get_json() == {"error": {"status": 409, "message": "a reload is already running"}}


def test_listing_group_alone(repo):
    client = bare_app(operations, ctx=route_context(repo))
    listed = client.get("/pipelines").get_json()
    assert listed == repo.listing()
    conf = client.get("/echo/config").get_json()
    assert conf["pipeline"] == "echo" and conf["version"] == 1 and conf["input"] == "text"
    assert conf["generation"] == repo.generation.number and conf["ops"] == repo.pipeline("echo").op_table()
    assert client.get("/echo/v1/config").get_json() == conf


def test_admin_group_alone(repo):
    client = bare_app(operations, ctx=route_context(repo))
    r = client.post("/admin/reload")
    assert r.status_code == 200
    assert r.get_json() == {
        "status": "reloaded",
        "generation": 2,
        "added": [],
        "changed": [],
        "removed": [],
        "unchanged": ["echo/v1"],
    }


def test_health_group_alone():
    pipeline = echo_pipeline()
    repository = PipelineRepository.of(pipeline)
    client = bare_app(operations, ctx=route_context(repository))
    for prefix in ("", "/v2"):
        assert client.get(f"{prefix}/health/live").get_json() == {"status": "live"}
        r = client.get(f"{prefix}/health/ready")
        assert r.status_code == 503 and r.get_json() == {"status": "not ready"}
    pipeline.start()
    try:
        for prefix in ("", "/v2"):
            r = client.get(f"{prefix}/health/ready")
            assert r.status_code == 200 and r.get_json() == {"status": "ready", "generation": 1}
    finally:
        pipeline.shutdown(timeout=5)


def test_metrics_group_alone():
    ctx = route_context(PipelineRepository.of(echo_pipeline()), metrics_text=lambda: b"up 1\n")
    r = bare_app(operations, ctx=ctx).get("/metrics")
    assert r.status_code == 200 and r.data == b"up 1\n"
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
