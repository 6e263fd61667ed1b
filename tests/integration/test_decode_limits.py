"""Bounded image decoding through the real Flask app (fake image op, no model):
admission before decoding, the server-wide decode budget, and request limits
counted in decoded bytes from the headers."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from serving.batching.decode_budget import MIB, DecodeBudget
from serving.batching.live_pipelines import PipelineRepository
from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.config.file_set import repository_of
from serving.http.app import create_app
from tests.support.waiting import until

OP = "tests.support.gated_image:GatedImageOp"


def config(gate: Path, *, max_queue_size: int = 64, max_image_pixels: int = 4_000_000, **top):
    return parse_config(
        {
            "name": "img",
            "max_image_pixels": max_image_pixels,
            "dag": {"request_timeout_ms": 20000, "max_queue_size": max_queue_size},
            "op": {
                "img": {
                    "class": OP,
                    "params": {"gate": str(gate)},
                    "local_service_conf": {"max_batch_size": 1, "concurrency": 4, "max_body_size": 1 << 24},
                }
            },
            **top,
        }
    )


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    (tmp_path / "go").touch()  # never leave a request held


def start(conf) -> Pipeline:
    pipeline = Pipeline(conf)
    pipeline.start()
    return pipeline


def png(img: np.ndarray) -> str:
    import cv2

    ok, buf = cv2.imencode(".png", img)
    assert ok
    return base64.b64encode(buf.tobytes()).decode()


def body(*images: str) -> str:
    return json.dumps({"key": ["image"] * len(images), "value": list(images)})


class CountingDecoder:
    """cv2.imdecode, counting its calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        import cv2

        self.calls = 0
        self._real = cv2.imdecode
        monkeypatch.setattr(cv2, "imdecode", self)

    def __call__(self, *args):
        self.calls += 1
        return self._real(*args)


def in_background(client, data: str, out: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(client.post("/img/prediction", data=data)))
    thread.start()
    return thread


def test_a_full_queue_answers_503_without_decoding(gate, monkeypatch):
    pipeline = start(config(gate, max_queue_size=1))
    try:
        client = create_app(pipeline).test_client()
        image = png(np.zeros((40, 50, 4), np.uint8))
        held: list = []
        first = in_background(client, body(image), held)
        assert until(lambda: pipeline.in_flight == 1, timeout=20, interval=0.01)
        decoder = CountingDecoder(monkeypatch)
        r = client.post("/img/prediction", data=body(image))
        assert r.status_code == 503 and "max_queue_size" in r.get_json()["err_msg"]
        assert int(r.headers["Retry-After"]) >= 1
        assert decoder.calls == 0  # refused before its image was decoded
        (gate / "go").touch()
        first.join(timeout=20)
        assert held[0].status_code == 200
    finally:
        pipeline.shutdown(timeout=5)


def test_requests_beyond_the_decode_budget_wait_then_get_503_and_the_budget_comes_back(gate):
    pipeline = start(config(gate))
    # 80,000 bytes decoded and a 60,000-byte BGR working copy; 80,000 more while it decodes
    image = png(np.zeros((100, 200, 4), np.uint8))
    budget = DecodeBudget(360_000, max_wait_s=0.2)  # one request of two such images
    try:
        client = create_app(pipeline, decode_budget=budget).test_client()
        held: list = []
        first = in_background(client, body(image), held)
        assert until(lambda: pipeline.in_flight == 1, timeout=20, interval=0.01)
        # one image's array and working copy, once decoded (the transient copy is given back)
        assert budget.in_use == 140_000
        refused: list = []
        others = [in_background(client, body(image, image), refused) for _ in range(3)]
        for thread in others:
            thread.join(timeout=20)
        assert [r.status_code for r in refused] == [503, 503, 503]
        assert all("decode_budget_mb" in r.get_json()["err_msg"] and r.headers["Retry-After"] for r in refused)
        assert budget.in_use == 140_000 and pipeline.in_flight == 1
        (gate / "go").touch()
        first.join(timeout=20)
        assert held[0].status_code == 200 and budget.in_use == 0  # released when the handler is done
        assert client.post("/img/prediction", data=body(image, image)).status_code == 200
        assert budget.in_use == 0
    finally:
        pipeline.shutdown(timeout=5)


def test_a_request_larger_than_the_whole_budget_gets_413_naming_the_key(gate, monkeypatch):
    pipeline = start(config(gate))
    try:
        client = create_app(pipeline, decode_budget=DecodeBudget(100_000)).test_client()
        decoder = CountingDecoder(monkeypatch)
        r = client.post("/img/prediction", data=body(png(np.zeros((100, 200, 4), np.uint8))))
        assert r.status_code == 413 and "decode_budget_mb" in r.get_json()["err_msg"]
        assert decoder.calls == 0
    finally:
        pipeline.shutdown(timeout=5)


def test_the_request_limit_counts_decoded_bytes_from_the_headers(gate, monkeypatch):
    # two 16-bit RGBA images: within the pixel limits, but 8 bytes a pixel
    pipeline = start(config(gate, max_image_pixels=10_000))
    try:
        client = create_app(pipeline).test_client()
        decoder = CountingDecoder(monkeypatch)
        deep = png(np.zeros((100, 100, 4), np.uint16))
        r = client.post("/img/prediction", data=body(deep, deep))
        assert r.status_code == 413 and "decode to over 80000 bytes" in r.get_json()["err_msg"]
        assert decoder.calls == 0
        (gate / "go").touch()
        assert client.post("/img/prediction", data=body(deep)).status_code == 200
    finally:
        pipeline.shutdown(timeout=5)


def test_the_budget_follows_reloads(gate, tmp_path):
    confs = [config(gate), config(gate, decode_budget_mb=64), config(gate, max_image_pixels=1_000_000)]
    repo = PipelineRepository(repository_of(confs[0]), loader=lambda sources: repository_of(confs.pop(0)))
    repo.start()
    try:
        budget = create_app(repo).core.decode_budget
        # derived: one maximal request (arrays, working copies) and its transient copy
        assert budget.capacity == 2 * 2 * 4_000_000 * 4 + 2 * 4_000_000 * 3
        confs.pop(0)
        repo.reload()
        assert budget.capacity == 64 * MIB  # the key applies without a restart
        repo.reload()
        assert budget.capacity == 2 * 2 * 1_000_000 * 4 + 2 * 1_000_000 * 3
    finally:
        repo.shutdown(timeout=5)
