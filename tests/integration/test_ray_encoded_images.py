"""On Ray, a request's images go to the op replicas as their files and are decoded there
(:func:`serving.rayserve.ingress.carried`), with the single-process server's answers,
statuses and messages, and every size limit still checked by the ingress before any
op call. The ingress is the real class over fake op deployments whose replicas are
real :class:`OpReplica` s in this process (calls cross a cloudpickle round trip)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from starlette.requests import Request
from starlette.testclient import TestClient

from serving.batching.live_pipelines import PipelineRepository
from serving.config.documents import parse_documents
from serving.http.app import create_app
from serving.rayserve.ingress import Ingress
from serving.service.decode import PendingInput
from tests.support.image_fakes import encode_png, expected_answer, make_image
from tests.support.ray_fakes import FakeCluster, as_dicts, document, op_conf

MAX_PIXELS = 64 * 64
DOCS = [
    document(
        "img",
        {"stats": op_conf("ImageStatsOp", module="tests.support.image_fakes")},
        max_image_pixels=MAX_PIXELS,
    )
]
OP = "img-stats"  # the op's deployment


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    import tempfile

    for var in ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture
def on_ray() -> Iterator[tuple[TestClient, FakeCluster]]:
    cluster = FakeCluster(DOCS)
    ingress = Ingress(as_dicts(DOCS), cluster.handles, None, status=cluster.status, app="test")

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        response = await ingress(Request(scope, receive))
        await response(scope, receive, send)

    try:
        yield TestClient(app), cluster
    finally:
        ingress.__del__()
        cluster.close()


@pytest.fixture
def local() -> Iterator[Any]:
    repo = PipelineRepository(parse_documents(DOCS), warmup=False)
    repo.start()
    try:
        yield create_app(repo).test_client()
    finally:
        repo.shutdown()


def paddle_body(*files: bytes) -> bytes:
    values = [base64.b64encode(f).decode() for f in files]
    return json.dumps({"key": ["image"] * len(values), "value": values}).encode()


def both(on_ray: tuple[TestClient, FakeCluster], local: Any, path: str, body: bytes, content_type: str) -> Any:
    """The Ray ingress's and the single-process server's answers to one request: (status, JSON) each."""
    client, _ = on_ray
    got = client.post(path, content=body, headers={"Content-Type": content_type})
    want = local.post(path, data=body, headers={"Content-Type": content_type})
    return (got.status_code, got.json()), (want.status_code, want.get_json())


def corrupt_png() -> bytes:
    """A PNG whose header reads well (size within the limit) and whose pixels do not decode."""
    data = bytearray(encode_png(make_image(32, 24, seed=3)))
    data[60:] = b"\0" * (len(data) - 60)
    return bytes(data)


def test_the_op_replica_gets_the_file_and_answers_as_the_server(on_ray, local):
    img = make_image(40, 30, seed=1)
    png = encode_png(img)
    got, want = both(on_ray, local, "/img/predict", png, "image/png")
    assert got == want == (200, {"results": [expected_answer(img)]})
    two = paddle_body(png, encode_png(make_image(8, 8)))
    got, want = both(on_ray, local, "/img/prediction", two, "application/json")
    assert got == want and got[0] == 200
    sent = on_ray[1].handles[OP].calls[0].inputs["input"]
    assert isinstance(sent, PendingInput) and not isinstance(sent, np.ndarray)
    assert bytes(sent.value) == png  # the file crossed, not its 3,600 bytes of pixels


@pytest.mark.parametrize("path", ["/img/predict", "/img/prediction"])
def test_pixels_that_do_not_decode_get_the_servers_status_and_message(on_ray, local, path):
    native = path.endswith("predict")
    body, kind = (corrupt_png(), "image/png") if native else (paddle_body(corrupt_png()), "application/json")
    got, want = both(on_ray, local, path, body, kind)
    assert got == want and got[0] == 400
    assert "cannot decode image" in json.dumps(got[1])


def test_an_image_over_the_limit_or_unreadable_is_refused_before_any_op_call(on_ray, local):
    for body in (encode_png(make_image(80, 80)), b"not an image at all"):
        got, want = both(on_ray, local, "/img/predict", body, "image/png")
        assert got == want and got[0] in (400, 413)
    assert on_ray[1].handles[OP].calls == []
