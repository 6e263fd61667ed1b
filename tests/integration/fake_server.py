"""A small Flask app that mimics the batchline server's HTTP API, for client tests.

No models: OCR answers two fixed lines, the first being the image's
``WIDTHxHEIGHT`` (so a test can tell which image arrived); text pipelines
answer ``positive`` when the text contains "good" or "好", else ``negative``.

Failures on demand (:class:`FakeConfig`):
* ``fail_every=N`` — every N-th prediction request (both endpoints) gets 503
  with ``Retry-After: 1``; counting is under a lock, so N requests give exactly
  ``N // fail_every`` 503s whatever the concurrency;
* an undecodable image -> 400; unknown pipeline -> 404; wrong/missing bearer
  token (when ``token`` is set) -> 401; the texts ``__413__``, ``__500__`` and
  ``__504__`` -> those statuses; ``__err_no__`` (paddle endpoint) -> HTTP 200
  with ``err_no`` 7; ``ready=False`` -> ``/health/ready`` 503.

``/metrics`` serves real Prometheus text (from a per-app registry) with the
batchline metric names: op ``det`` (images) and ``cls`` (texts) record one batch
per request, queue wait 2 ms, run 10 ms, and 80 real units per 100 padded.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, jsonify, request
from PIL import Image
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from werkzeug.serving import WSGIRequestHandler, make_server

TEXT_STATUSES = {"__413__": 413, "__500__": 500, "__504__": 504}
QUEUE_WAIT_S = 0.002
RUN_S = 0.010


@dataclass
class FakeConfig:
    pipelines: tuple[str, ...] = ("ocr", "ernie")
    token: str | None = None
    fail_every: int = 0
    ready: bool = True


class FakeError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


class _Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.batch_size = Histogram(
            "batchline_op_batch_size", "batch size", ["op"], registry=r, buckets=(1, 2, 4, 8, 16, 32)
        )
        self.queue_wait = Histogram("batchline_op_queue_wait_seconds", "wait", ["op"], registry=r)
        self.run = Histogram("batchline_op_run_seconds", "run", ["op"], registry=r)
        self.real = Counter("batchline_op_real_units", "real units", ["op"], registry=r)
        self.padded = Counter("batchline_op_padded_units", "padded units", ["op"], registry=r)
        self.items = Counter("batchline_op_items", "items", ["op"], registry=r)
        self.op_errors = Counter("batchline_op_errors", "errors", ["op", "status"], registry=r)
        self.requests = Counter("batchline_requests", "requests", ["pipeline", "status"], registry=r)
        self.in_flight = Gauge("batchline_requests_in_flight", "in flight", ["pipeline"], registry=r)
        self.seconds = Histogram("batchline_request_seconds", "latency", ["pipeline"], registry=r)

    def batch(self, op: str, n: int) -> None:
        self.batch_size.labels(op).observe(n)
        self.queue_wait.labels(op).observe(QUEUE_WAIT_S)
        self.run.labels(op).observe(RUN_S)
        self.real.labels(op).inc(80 * n)
        self.padded.labels(op).inc(100 * n)
        self.items.labels(op).inc(n)


def _ocr_result(data: bytes) -> list[dict[str, Any]]:
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as e:  # noqa: BLE001 - any decode failure is the client's fault
        raise FakeError(400, f"cannot decode image: {type(e).__name__}") from e
    w, h = img.size
    return [
        {"text": f"{w}x{h}", "score": 0.99, "box": [[2, 2], [w - 2, 2], [w - 2, h // 2], [2, h // 2]]},
        {
            "text": "你好 world",
            "score": 0.875,
            "box": [[2, h // 2 + 1], [w - 2, h // 2 + 1], [w - 2, h - 2], [2, h - 2]],
        },
    ]


def _text_result(text: str) -> dict[str, Any]:
    if text in TEXT_STATUSES:
        raise FakeError(TEXT_STATUSES[text], f"forced {TEXT_STATUSES[text]}")
    positive = "good" in text or "好" in text
    return {
        "label": "positive" if positive else "negative",
        "score": 0.9,
        "probs": [0.1, 0.9] if positive else [0.9, 0.1],
    }


def create_app(config: FakeConfig | None = None) -> Flask:
    cfg = config or FakeConfig()
    app = Flask("fake_batchline")
    metrics = _Metrics()
    lock = threading.Lock()
    counter = {"n": 0}

    def admit(name: str) -> None:
        if cfg.token and request.headers.get("Authorization") != f"Bearer {cfg.token}":
            raise FakeError(401, "missing or wrong bearer token")
        if name not in cfg.pipelines:
            raise FakeError(404, f"unknown pipeline {name!r}")
        with lock:
            counter["n"] += 1
            n = counter["n"]
        if cfg.fail_every and n % cfg.fail_every == 0:
            raise FakeError(503, "server overloaded, retry later", retry_after=1)

    def run(name: str, inputs: list[tuple[str, Any]]) -> list[Any]:
        if not inputs:
            raise FakeError(400, "no inputs")
        out = []
        for kind, value in inputs:
            if kind == "image":
                out.append(_ocr_result(value))
            elif kind == "text":
                out.append(_text_result(value))
            else:
                raise FakeError(400, f"unknown key {kind!r}")
        n_img = sum(1 for k, _ in inputs if k == "image")
        if n_img:
            metrics.batch("det", n_img)
        if len(inputs) - n_img:
            metrics.batch("cls", len(inputs) - n_img)
        metrics.requests.labels(name, "200").inc()
        return out

    def fail(name: str, e: FakeError, body: dict[str, Any]) -> Response:
        metrics.requests.labels(name, str(e.status)).inc()
        resp = jsonify(body)
        resp.status_code = e.status
        if e.retry_after is not None:
            resp.headers["Retry-After"] = str(int(e.retry_after))
        return resp

    @app.post("/<name>/prediction")
    def prediction(name: str):
        body = request.get_json(silent=True) or {}
        logid = body.get("logid", 0)
        try:
            admit(name)
            keys, values = body.get("key", []), body.get("value", [])
            if len(keys) != len(values):
                raise FakeError(400, "key and value differ in length")
            inputs = []
            for k, v in zip(keys, values):
                if k == "image":
                    try:
                        v = base64.b64decode(v, validate=True)
                    except ValueError as e:
                        raise FakeError(400, "image value is not base64") from e
                inputs.append((k, v))
            if "__err_no__" in values:  # Paddle Serving style: HTTP 200 but err_no != 0
                return jsonify({"err_no": 7, "err_msg": "forced err_no", "key": [], "value": [], "logid": logid})
            results = run(name, inputs)
        except FakeError as e:
            return fail(name, e, {"err_no": e.status, "err_msg": e.message, "key": [], "value": [], "logid": logid})
        return jsonify(
            {
                "err_no": 0,
                "err_msg": "",
                "key": ["result"] * len(results),
                "value": [json.dumps(r, ensure_ascii=False) for r in results],
                "logid": logid,
            }
        )

    @app.post("/<name>/predict")
    def predict(name: str):
        try:
            admit(name)
            inputs: list[tuple[str, Any]] = []
            ctype = request.content_type or ""
            if ctype.startswith("image/"):
                inputs.append(("image", request.get_data()))
            elif ctype.startswith("multipart/form-data"):
                inputs += [("image", f.read()) for f in request.files.getlist("image")]
                inputs += [("text", t) for t in request.form.getlist("text")]
            else:
                body = request.get_json(silent=True) or {}
                for item in body.get("inputs", []):
                    if "image" in item:
                        inputs.append(("image", base64.b64decode(item["image"])))
                    else:
                        inputs.append(("text", item.get("text", "")))
            results = run(name, inputs)
        except FakeError as e:
            return fail(name, e, {"error": {"status": e.status, "message": e.message}})
        return jsonify({"results": results})

    @app.get("/<name>/config")
    def config(name: str):
        if name not in cfg.pipelines:
            return jsonify({"error": {"status": 404, "message": "unknown pipeline"}}), 404
        return jsonify(
            [
                {"name": "det", "class": "ocr_det", "input_ops": [], "max_batch_size": 4},
                {"name": "rec", "class": "ocr_rec", "input_ops": ["det"], "max_batch_size": 32},
            ]
        )

    @app.get("/health/live")
    @app.get("/v2/health/live")
    def live():
        return jsonify({"status": "live"})

    @app.get("/health/ready")
    @app.get("/v2/health/ready")
    def ready():
        return (jsonify({"status": "ready"}), 200) if cfg.ready else (jsonify({"status": "not ready"}), 503)

    @app.get("/metrics")
    def metrics_route():
        return Response(generate_latest(metrics.registry), mimetype="text/plain; version=0.0.4")

    return app


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:  # keep test output readable
        pass


class FakeServer:
    """``create_app(config)`` served on 127.0.0.1 (free port) in a background thread."""

    def __init__(self, config: FakeConfig | None = None):
        self.config = config or FakeConfig()
        self._server = make_server(
            "127.0.0.1", 0, create_app(self.config), threaded=True, request_handler=_QuietHandler
        )
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-server", daemon=True)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
