"""The real server on configs/ocr.yml with the real weights, driven by the
bundled client: same text as PaddleOCR 2.10 one request at a time, with 16
requests in flight, and with rec's crops of different requests sharing predictor
calls (rec under the fixed batching policy), a multi-line image read end to end,
and bad input answered with 4xx while the server keeps serving. Pages and PaddleOCR's answers: tests/data/ocr/."""

import base64
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import yaml

from client import PipelineClient, PipelineError
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages
from tests.support.server_process import ROOT, ServerProcess


@pytest.fixture(scope="module")
def server():
    with ServerProcess(os.path.join("configs", "ocr.yml")) as srv:
        yield srv


@pytest.fixture(scope="module")
def batching_server(tmp_path_factory):
    """configs/ocr.yml with rec under ``batching_policy: fixed``. The shipped adaptive
    policy runs crops one at a time on a CPU where its warmed-up cost model finds that
    batching saves too little, which depends on the machine; this server always batches
    what its queue holds, so crops of different requests share predictor calls."""
    with open(os.path.join(ROOT, "configs", "ocr.yml"), encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["op"]["rec"]["local_service_conf"]["batching_policy"] = "fixed"
    path = tmp_path_factory.mktemp("ocr") / "ocr_fixed_batching.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with ServerProcess(str(path)) as srv:
        yield srv


def png(img):
    from tests.support.synth import encode_image

    return encode_image(img, ".png")


def test_sequential_requests_match_paddleocr(server, docs, reference):
    with PipelineClient(server.url, timeout=120) as client:
        answers = [client.predict("ocr", image=png(d.image))[0] for d in docs]
    rate, misses = match_rate_over_pages(reference, answers)
    assert rate >= MIN_MATCH, (rate, misses)


def concurrently(url, images):
    """Send every image at once (one client each); their answers, in order."""

    def one(data):
        with PipelineClient(url, timeout=300) as client:
            return client.predict("ocr", image=data)[0]

    with ThreadPoolExecutor(len(images)) as pool:
        return list(pool.map(one, images))


def rec_stats(url, send):
    """(result of ``send()``, the rec op's statistics over it)."""
    from client.stats import MetricsSnapshot, op_stats

    with PipelineClient(url) as client:
        before = MetricsSnapshot.from_text(client.metrics_text())
        result = send()
        after = MetricsSnapshot.from_text(client.metrics_text())
    return result, op_stats(before, after)["rec"]


def test_sixteen_concurrent_requests_match_paddleocr(server, docs, reference):
    # the varied pages (4 of them twice) on the shipped config: concurrency changes no line
    answers = concurrently(server.url, [png(d.image) for d in docs + docs[:4]])
    rate, misses = match_rate_over_pages(reference + reference[:4], answers)
    assert rate >= MIN_MATCH, (rate, misses)


def test_crops_of_concurrent_requests_share_predictor_calls_and_still_match(
    batching_server, docs, reference, short_docs, short_reference
):
    answers = concurrently(batching_server.url, [png(d.image) for d in docs])
    rate, misses = match_rate_over_pages(reference, answers)
    assert rate >= MIN_MATCH, (rate, misses)

    # Real predictor calls hold crops of different requests. configs/ocr.yml pads each
    # crop exactly as PaddleOCR does (to the widest of its page's group of 6), and only
    # crops of equal padded width can share a call; the varied pages' widths are nearly
    # all distinct, so they seldom share one. Every crop of the short-line pages pads
    # to 320 px: whenever the rec queue holds two requests' crops, they share a call.
    url = batching_server.url
    answers, rec = rec_stats(url, lambda: concurrently(url, [png(d.image) for d in short_docs]))
    rate, misses = match_rate_over_pages(short_reference, answers)
    assert rate >= MIN_MATCH, (rate, misses)
    assert rec["shared_calls"] >= 1, rec  # a predictor call held crops of more than one request


def test_multi_line_image_through_the_predict_command(server, tmp_path):
    from tests.support import ocr_data

    (doc,) = ocr_data.pages("invoice")
    lines = [line.text for line in doc.lines]
    assert any(not t.isascii() for t in lines)  # a Chinese line among them
    path = tmp_path / "page.png"
    path.write_bytes(png(doc.image))
    out = subprocess.run(
        [sys.executable, "-m", "serving.cli", "predict", "--url", server.url, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    texts = [line.split("\t")[0] for line in out.stdout.splitlines() if "\t" in line]
    assert [t.replace(" ", "") for t in texts] == [t.replace(" ", "") for t in lines]


def test_several_images_in_one_request_answered_in_order(server, docs):
    body = {"key": ["image", "image"], "value": [base64.b64encode(png(d.image)).decode() for d in docs[:2]]}
    r = requests.post(server.url + "/ocr/prediction", data=json.dumps(body), timeout=120)
    assert r.status_code == 200 and r.json()["err_no"] == 0
    first, second = (json.loads(v) for v in r.json()["value"])
    assert first and second and first != second
    with PipelineClient(server.url, timeout=120) as client:
        assert client.predict("ocr", image=png(docs[0].image))[0] == first


def test_bad_images_are_4xx_and_the_server_keeps_serving(server, docs):
    with PipelineClient(server.url, timeout=60) as client:
        for data in (b"not an image", png(docs[0].image)[:100], b""):
            with pytest.raises(PipelineError) as info:
                client.predict("ocr", image=data)
            assert 400 <= info.value.status < 500, info.value
        assert client.health_ready()
        assert client.predict("ocr", image=png(docs[1].image))[0]


def test_blank_image_has_no_lines(server):
    import numpy as np

    with PipelineClient(server.url, timeout=60) as client:
        assert client.predict("ocr", image=png(np.full((64, 64, 3), 255, np.uint8))) == [[]]
