"""ERNIE pipelines through the real server: text -> field label, and
det -> rec -> ERNIE on a rendered document."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from client import PipelineClient, PipelineError
from tests.support.server_process import ServerProcess

TEXTS = {
    "2024-03-15": "date",
    "2024年3月15日": "date",
    "¥1,234.50": "money",
    "总计：345.00元": "money",
    "Tel: 138-1234-5678": "phone",
    "电话 010-12345678": "phone",
    "订单号 20240315001": "id",
    "北京市海淀区中关村大街1号": "address",
    "221B Baker Street, London": "address",
}


@pytest.fixture(scope="module")
def ernie_server():
    with ServerProcess(os.path.join("configs", "ernie.yml")) as srv:
        yield srv


def test_texts_get_field_labels(ernie_server):
    with PipelineClient(ernie_server.url, timeout=60) as client:
        results = client.predict("ernie", texts=list(TEXTS))
    assert [r["label"] for r in results] == list(TEXTS.values())
    for r in results:
        assert 0.5 < r["score"] <= 1.0 and abs(sum(r["probs"].values()) - 1.0) < 1e-4


def test_batched_answers_equal_one_at_a_time(ernie_server):
    texts = [t * k for t in TEXTS for k in (1, 3)]  # mixed lengths

    def one(text):
        with PipelineClient(ernie_server.url, timeout=60) as client:
            return client.predict("ernie", text=text)[0]

    sequential = [one(t) for t in texts]
    with ThreadPoolExecutor(16) as pool:
        concurrent = list(pool.map(one, texts))
    for a, b in zip(sequential, concurrent):
        assert a["label"] == b["label"]
        assert abs(a["score"] - b["score"]) < 1e-4


def test_bad_text_is_400(ernie_server):
    with PipelineClient(ernie_server.url, timeout=60) as client:
        with pytest.raises(PipelineError) as info:
            client.predict("ernie", text="   ")
        assert info.value.status == 400
        with pytest.raises(PipelineError) as info:
            client.predict("ernie", image=b"\x89PNG")  # this pipeline takes text
        assert info.value.status == 400


def test_ocr_then_ernie_labels_every_line(tmp_path):
    from tests.support.synth import encode_image, render_document

    lines = ["2024-03-15", "Tel: 138-1234-5678", "Total 345.00 USD"]
    doc = render_document(lines, font_size=34)
    with ServerProcess(os.path.join("configs", "ocr_ernie.yml")) as srv, PipelineClient(srv.url, timeout=120) as client:
        (result,) = client.predict("ocr_ernie", image=encode_image(doc.image))
    assert [r["label"] for r in result] == ["date", "phone", "money"]
    assert all({"text", "score", "box", "label", "label_score"} <= set(r) for r in result)
