"""Every endpoint and every error status through Flask's test client, on a
fake text pipeline (no model)."""

import base64
import json

import pytest

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import create_app
from serving.service.decode import InputLimits
from serving.service.limits import RequestLimits

FAKES = "tests.support.engine_fakes"


def make_pipeline(**dag):
    dag_conf = {"request_timeout_ms": 10000, "max_queue_size": 64, "priority_levels": 2}
    dag_conf.update(dag)
    config = parse_config(
        {
            "name": "echo",
            "max_inputs_per_request": 4,
            "dag": dag_conf,
            "op": {
                "echo": {
                    "class": f"{FAKES}:EchoTextOp",
                    "local_service_conf": {"max_batch_size": 4, "max_queue_delay": 1, "max_body_size": 4096},
                }
            },
        }
    )
    return Pipeline(config)


@pytest.fixture
def pipeline():
    p = make_pipeline()
    p.start()
    yield p
    p.shutdown(timeout=5)


@pytest.fixture
def client(pipeline):
    return create_app(pipeline).test_client()


def paddle(client, keys, values, **extra):
    body = {"key": keys, "value": values, "logid": 7}
    body.update(extra)
    return client.post("/echo/prediction", data=json.dumps(body))  # no Content-Type, like Paddle Serving clients


def test_paddle_prediction_success(client):
    r = paddle(client, ["text", "text"], ["hello", "héllo 世界"])
    assert r.status_code == 200
    body = r.get_json()
    assert body["err_no"] == 0 and body["err_msg"] == "" and body["logid"] == 7
    assert body["key"] == ["result", "result"]
    assert [json.loads(v) for v in body["value"]] == [
        {"text": "hello", "double_len": 10},
        {"text": "héllo 世界", "double_len": 16},
    ]


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        (b"not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "UTF-8"),
        (b"[1, 2]", 400, "JSON object"),
        (json.dumps({"key": ["text"]}).encode(), 400, "'key' and 'value'"),
        (json.dumps({"key": ["text"], "value": ["a", "b"]}).encode(), 400, "entries"),
        (json.dumps({"key": [], "value": []}).encode(), 400, "no inputs"),
        (json.dumps({"key": ["image"], "value": ["aGk="]}).encode(), 400, "takes 'text'"),
        (json.dumps({"key": [1], "value": ["a"]}).encode(), 400, "must be a string"),
        (json.dumps({"key": ["text"], "value": [5]}).encode(), 400, "expected a string"),
        (json.dumps({"key": ["text"], "value": ["bad"]}).encode(), 400, "rejected"),
        (json.dumps({"key": ["text"], "value": ["a"], "priority": 5}).encode(), 400, "priority"),
        (json.dumps({"key": ["text"], "value": ["a"], "timeout_ms": "x"}).encode(), 400, "timeout_ms"),
        (json.dumps({"key": ["text"] * 5, "value": ["a"] * 5}).encode(), 413, "limit 4"),
        (json.dumps({"key": ["text"], "value": ["x" * 5000]}).encode(), 413, "max_body_size"),
        (json.dumps({"key": ["text"], "value": ["boom"]}).encode(), 500, "injected"),
    ],
)
def test_paddle_prediction_errors(client, body, status, fragment):
    r = client.post("/echo/prediction", data=body)
    assert r.status_code == status
    out = r.get_json()
    assert out["err_no"] == status and fragment in out["err_msg"]  # one rule: err_no is the HTTP status
    assert out["value"] == []


def test_one_failing_input_fails_the_request_naming_it(client):
    r = paddle(client, ["text", "text"], ["fine", "bad"])
    assert r.status_code == 400 and "input 1" in r.get_json()["err_msg"]
    assert r.get_json()["err_no"] == 400


def test_unknown_pipeline_and_route_404(client):
    assert client.post("/nope/prediction", data="{}").status_code == 404
    r = client.get("/no/such/route")
    assert r.status_code == 404 and r.get_json()["error"]["status"] == 404


def test_method_not_allowed_is_an_error_not_200(client):
    r = client.get("/echo/prediction")
    assert r.status_code == 405 and r.get_json()["err_no"] == 405


def test_native_json_with_timing(client):
    r = client.post("/echo/predict", json={"inputs": [{"text": "ab"}, {"text": "c"}], "timing": True})
    assert r.status_code == 200
    body = r.get_json()
    assert body["results"] == [{"text": "ab", "double_len": 4}, {"text": "c", "double_len": 2}]
    assert "echo" in body["timing"][0]["ops"] and body["timing"][0]["total_ms"] >= 0


def test_native_multipart_and_raw_text(client):
    r = client.post("/echo/predict", data={"text": ["one", "three"]}, content_type="multipart/form-data")
    assert r.status_code == 200 and [x["text"] for x in r.get_json()["results"]] == ["one", "three"]
    r = client.post("/echo/predict", data=b"raw body", content_type="text/plain")
    assert r.get_json()["results"] == [{"text": "raw body", "double_len": 16}]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"json": {"inputs": "x"}}, "'inputs' list"),
        ({"json": {"inputs": [{"image": "aGk="}]}}, "takes 'text'"),
        ({"json": {"inputs": [{"text": "a", "extra": 1}]}}, "one key"),
        ({"data": b"abc", "content_type": "application/octet-stream"}, "unsupported Content-Type"),
        ({"data": b"\xff", "content_type": "text/plain"}, "UTF-8"),
    ],
)
def test_native_errors(client, kwargs, fragment):
    r = client.post("/echo/predict", **kwargs)
    assert r.status_code == 400
    assert fragment in r.get_json()["error"]["message"]


def test_health_metrics_config(client, pipeline):
    for path in ("/health/live", "/v2/health/live", "/health/ready", "/v2/health/ready"):
        assert client.get(path).status_code == 200
    paddle(client, ["text"], ["abc"])
    text = client.get("/metrics").get_data(as_text=True)
    assert 'batchline_op_batch_size_count{op="echo",pipeline="echo",version="1"}' in text
    assert 'batchline_requests_total{pipeline="echo",status="200",version="1"}' in text
    cfg = client.get("/echo/config").get_json()
    assert cfg["pipeline"] == "echo" and cfg["ops"][0]["op"] == "echo"
    assert cfg["ops"][0]["max_batch_size"] == 4


def test_not_ready_before_start_and_after_shutdown():
    p = make_pipeline()
    c = create_app(p).test_client()
    assert c.get("/health/ready").status_code == 503
    assert c.get("/health/live").status_code == 200
    p.start()
    assert c.get("/health/ready").status_code == 200
    p.shutdown(timeout=5)
    assert c.get("/health/ready").status_code == 503
    r = paddle(c, ["text"], ["late"])
    assert r.status_code == 503 and r.headers["Retry-After"]


def slow_pipeline(delay_ms, **dag):
    config = parse_config(
        {
            "name": "echo",
            "dag": dict({"request_timeout_ms": 10000}, **dag),
            "op": {
                "echo": {
                    "class": f"{FAKES}:EchoTextOp",
                    "params": {"delay_ms": delay_ms},
                    "local_service_conf": {"max_batch_size": 1},
                }
            },
        }
    )
    p = Pipeline(config)
    p.start()
    return p


def test_overload_is_503_with_retry_after():
    p = slow_pipeline(300, max_queue_size=1)
    try:
        blocker = p.submit("occupy")  # holds the only admission slot for ~300 ms
        r = paddle(create_app(p).test_client(), ["text"], ["y"])
        assert not blocker.done
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
        assert "max_queue_size" in r.get_json()["err_msg"]
        assert blocker.result()["text"] == "occupy"
    finally:
        p.shutdown(timeout=5)


def test_deadline_is_504():
    p = slow_pipeline(300)
    try:
        c = create_app(p).test_client()
        p.submit("occupy")
        r = paddle(c, ["text"], ["slow"], timeout_ms=20)
        assert r.status_code == 504 and r.get_json()["err_no"] == 504
    finally:
        p.shutdown(timeout=5)


def test_bearer_token(pipeline):
    c = create_app(pipeline, auth_token="s3cret").test_client()
    assert paddle(c, ["text"], ["a"]).status_code == 401
    r = c.post(
        "/echo/prediction",
        data=json.dumps({"key": ["text"], "value": ["a"]}),
        headers={"Authorization": "Bearer s3cret"},
    )
    assert r.status_code == 200
    assert (
        c.post("/echo/predict", json={"inputs": [{"text": "a"}]}, headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    assert c.get("/health/ready").status_code == 200  # probes need no token
    assert c.get("/metrics").status_code == 401


def test_input_limits_for_text(pipeline):
    limits = RequestLimits(max_body_size=1 << 20, max_inputs=4, inputs=InputLimits(max_text_chars=10))
    c = create_app(pipeline, limits=limits).test_client()
    r = paddle(c, ["text"], ["x" * 11])
    assert r.status_code == 413 and "limit 10" in r.get_json()["err_msg"]


def test_base64_errors_named():
    from serving.errors import BadRequest
    from serving.service.decode import decode_base64

    with pytest.raises(BadRequest, match="input 0: invalid base64"):
        decode_base64("@@not base64@@", "input 0")
    assert decode_base64("data:image/png;base64," + base64.b64encode(b"hi").decode(), "x") == b"hi"
    wrapped = base64.encodebytes(b"x" * 100).decode()  # line breaks every 76 characters
    assert "\n" in wrapped.strip() and decode_base64(wrapped, "x") == b"x" * 100


def test_an_integer_option_is_an_integer_whatever_its_length_or_transport(client):
    """Regression: the query string refused integers over 12 digits that a JSON body accepted."""
    big = "1" + "0" * 15
    native = client.post(f"/echo/predict?timeout_ms={big}", data=b"abc", content_type="text/plain")
    assert native.status_code == 200, native.get_data(as_text=True)
    paddle = client.post("/echo/prediction", json={"key": ["text"], "value": ["abc"], "timeout_ms": int(big)})
    assert paddle.status_code == 200


def test_readiness_and_liveness_follow_the_instances_of_an_op():
    """An op with no instance up: not ready; every instance gone for good: not live either."""
    import threading
    from types import SimpleNamespace

    p = make_pipeline()
    c = create_app(p).test_client()
    p.start()
    (stage,) = p.stages.values()
    real = stage._runners
    instance = SimpleNamespace(ready=threading.Event(), failed=False)  # a predictor process restarting
    stage._runners = [instance]
    try:
        assert c.get("/health/ready").status_code == 503 and c.get("/health/live").status_code == 200
        instance.failed = True  # its restarts all failed
        live = c.get("/health/live")
        assert live.status_code == 503 and "lost every instance" in live.get_json()["status"]
        instance.failed = False
        instance.ready.set()  # back
        assert c.get("/health/ready").status_code == 200 and c.get("/health/live").status_code == 200
    finally:
        stage._runners = real
        p.shutdown(timeout=5)
