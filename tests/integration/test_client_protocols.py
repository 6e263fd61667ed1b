"""The bundled client over every protocol (`--protocol grpc|v2|v2-grpc`) against
the real app: :class:`tests.support.live_app.LiveApp` serving the model-free OCR-
and ERNIE-shaped pipelines (tests/support/client_fakes.py) on HTTP and on
``rpc_port``. Each protocol must give what the HTTP API gives: the same Python
results, the same statuses in :class:`PipelineError` (with ``Retry-After``), the
token, and `batchline predict` / `batchline bench` output. Held batches (``HOLD``)
make admission and deadlines exact; tests assert counts and statuses, never speed."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from PIL import Image

from client import bench as bench_cmd
from client import cli as predict_cmd
from client.pipeline_client import PipelineClient, PipelineError
from tests.support.client_fakes import BAD, BOOM, HOLD, OVERLOADED, ocr_lines, text_config
from tests.support.live_app import LiveApp
from tests.support.server_process import free_port

pytestmark = pytest.mark.slow

OTHERS = ("grpc", "v2", "v2-grpc")  # each compared with the HTTP API's own protocols
SIZES = [(120, 40), (64, 32), (200, 50)]


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    monkeypatch.delenv("BATCHLINE_AUTH_TOKEN", raising=False)


def client_of(live: LiveApp, **kwargs: Any) -> PipelineClient:
    return PipelineClient(live.url, rpc_url=live.rpc_address, **kwargs)


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("imgs")
    for i, (w, h) in enumerate(SIZES):
        Image.new("RGB", (w, h), (255, 255, 255)).save(d / f"img{i}.png")
    return d


# ----------------------------------------------------------------------------- the same results


@pytest.mark.parametrize("protocol", OTHERS)
def test_images_give_the_http_results(ocr, image_dir, protocol):
    arr = np.zeros((30, 90, 3), np.uint8)
    several = [image_dir / "img2.png", arr, str(image_dir / "img0.png")]
    with client_of(ocr) as c:
        http = [c.predict("ocr", image=str(image_dir / "img1.png")), c.predict("ocr", images=several)]
        other = [
            c.predict("ocr", image=str(image_dir / "img1.png"), protocol=protocol),
            c.predict("ocr", images=several, protocol=protocol),
        ]
    assert other == http  # the same Python objects, floats and all
    assert other[1] == [ocr_lines(200, 50), ocr_lines(90, 30), ocr_lines(120, 40)]


@pytest.mark.parametrize("protocol", OTHERS)
def test_texts_give_the_http_results(ernie, protocol):
    texts = ["这个很好", "bad", "good day"]
    with client_of(ernie) as c:
        http = c.predict("ernie", texts=texts)
        native = c.predict("ernie", texts=texts, protocol="native")
        other = c.predict("ernie", texts=texts, protocol=protocol)
        one = c.predict("ernie", text="good", protocol=protocol, version=1)
    assert other == http == native
    assert [r["label"] for r in other] == ["positive", "negative", "positive"]
    assert one == [{"label": "positive", "score": 0.9, "probs": [0.1, 0.9]}]


# ----------------------------------------------------------------------------- the same failures


@pytest.mark.parametrize(
    "server, inputs, status, fragment",
    [
        ("ocr", {"image": b"not an image"}, 400, "image"),
        ("ernie", {"text": BAD}, 400, "rejected"),
        ("ernie", {"texts": ["a"] * 5}, 413, "limit 4"),  # max_inputs_per_request
        ("ocr", {"image": np.zeros((300, 400, 3), np.uint8)}, 413, "limit is 100000"),  # max_image_pixels
        ("ernie", {"text": BOOM}, 500, "injected predictor failure"),
    ],
)
@pytest.mark.parametrize("protocol", OTHERS)
def test_error_statuses_are_the_http_ones(request, server, inputs, status, fragment, protocol):
    with client_of(request.getfixturevalue(server)) as c, pytest.raises(PipelineError) as info:
        c.predict(server, protocol=protocol, **inputs)
    assert info.value.status == status
    assert fragment in info.value.message
    assert info.value.retry_after is None


@pytest.mark.parametrize("protocol", OTHERS)
def test_a_message_over_max_body_size_is_413(ocr, protocol):
    with client_of(ocr) as c, pytest.raises(PipelineError) as info:
        c.predict("ocr", image=os.urandom(1_100_000), protocol=protocol)  # over 1 MiB
    assert info.value.status == 413


@pytest.mark.parametrize("protocol", OTHERS)
def test_unknown_pipeline_and_version_are_404(ocr, protocol):
    with client_of(ocr) as c:
        with pytest.raises(PipelineError) as info:
            c.predict("nope", text="x", protocol=protocol)
        assert info.value.status == 404 and "nope" in info.value.message
        with pytest.raises(PipelineError) as info:
            c.predict("ocr", image=Image.new("L", (33, 21)), protocol=protocol, version=7)
        assert info.value.status == 404


@pytest.mark.parametrize("protocol", OTHERS)
def test_overloaded_is_503_with_retry_after(ernie, protocol):
    with client_of(ernie) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text=OVERLOADED, protocol=protocol)
    assert info.value.status == 503 and "overloaded" in info.value.message
    if protocol != "grpc":  # Paddle Serving's answer has no field for it (a retry-after trailer is read if sent)
        assert info.value.retry_after == 1.0


@pytest.mark.parametrize("protocol", OTHERS)
def test_admission_503_and_deadline_504(live_app, protocol):
    live = live_app(text_config(max_queue_size=1), rpc=True)
    with ThreadPoolExecutor(1) as pool, client_of(live) as c:
        try:
            held = pool.submit(c.predict, "ernie", text=HOLD, protocol=protocol)
            _wait_until(lambda: live.pipeline.in_flight == 1)  # the held request has the only slot
            with pytest.raises(PipelineError) as full:
                c.predict("ernie", text="good", protocol=protocol)
        finally:
            live.op("cls").release()
        assert held.result(timeout=30)[0]["label"] == "negative"
    assert full.value.status == 503 and (protocol == "grpc" or full.value.retry_after >= 1)
    assert "max_queue_size 1" in full.value.message

    live = live_app(text_config(), rpc=True)
    try:
        with client_of(live) as c, pytest.raises(PipelineError) as late:
            c.predict("ernie", text=HOLD, timeout_ms=50, protocol=protocol)
    finally:
        live.op("cls").release()
    assert late.value.status == 504


def _wait_until(condition, timeout: float = 30.0) -> None:
    import time

    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        time.sleep(0.005)


@pytest.mark.parametrize("protocol", OTHERS)
def test_bearer_token(live_app, protocol):
    live = live_app(text_config(auth_token="s3cret"), rpc=True)
    for token in (None, "wrong"):
        with client_of(live, token=token) as c, pytest.raises(PipelineError) as info:
            c.predict("ernie", text="good", protocol=protocol)
        assert info.value.status == 401
    with client_of(live, token="s3cret") as c:
        assert c.predict("ernie", text="good", protocol=protocol)[0]["label"] == "positive"


@pytest.mark.parametrize("protocol", ("grpc", "v2-grpc"))
def test_no_server_at_the_rpc_address_is_status_0(protocol):
    nobody = f"127.0.0.1:{free_port()}"
    with PipelineClient("http://127.0.0.1:1", rpc_url=nobody, timeout=5) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text="x", protocol=protocol)
    assert info.value.status == 0 and "no answer" in info.value.message


def test_a_grpc_protocol_without_rpc_url_is_a_clear_error(ernie):
    with PipelineClient(ernie.url) as c, pytest.raises(ValueError, match="rpc_url"):
        c.predict("ernie", text="good", protocol="grpc")


# ----------------------------------------------------------------------------- batchline predict and bench


def _predict(argv: list[str]) -> int:
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def _bench(argv: list[str]) -> int:
    return bench_cmd.main(bench_cmd.build_parser().parse_args(argv))


@pytest.mark.parametrize("protocol", OTHERS)
def test_cli_predict_prints_what_http_prints(ocr, ernie, image_dir, capsys, protocol):
    port = str(ocr.server.rpc_port)  # a bare PORT: --url's host
    assert _predict(["--url", ocr.url, "--json", str(image_dir)]) == 0
    http = capsys.readouterr().out
    assert _predict(["--url", ocr.url, "--json", "--protocol", protocol, "--rpc-url", port, str(image_dir)]) == 0
    assert capsys.readouterr().out == http
    argv = ["--url", ernie.url, "--pipeline", "ernie", "--text", "很好", "--text", BOOM]
    assert _predict([*argv, "--protocol", protocol, "--rpc-url", ernie.rpc_address]) == 1
    cap = capsys.readouterr()
    assert cap.out == "== 很好\npositive\t0.9000\n" and "HTTP 500" in cap.err


def test_cli_without_rpc_url_is_a_usage_error(ernie, tmp_path, capsys):
    assert _predict(["--url", ernie.url, "--pipeline", "ernie", "--text", "x", "--protocol", "v2-grpc"]) == 2
    assert "--rpc-url" in capsys.readouterr().err
    texts = tmp_path / "t.txt"
    texts.write_text("good\n")
    assert _bench(["--url", ernie.url, "--text-file", str(texts), "--protocol", "grpc", "--rpc-url", "nohost"]) == 1
    assert "HOST:PORT" in capsys.readouterr().err


@pytest.mark.parametrize("protocol", OTHERS)
def test_bench_counts_each_protocol_like_http(ernie, tmp_path, capsys, protocol):
    texts = tmp_path / "texts.txt"
    texts.write_text(f"good\nbad\n{BOOM}\n", encoding="utf-8")
    out_json = tmp_path / "t.json"
    argv = ["--url", ernie.url, "--pipeline", "ernie", "--text-file", str(texts), "--concurrency", "2"]
    argv += ["--duration", "60", "--warmup", "0", "--max-requests", "9", "--json", str(out_json)]
    assert _bench([*argv, "--protocol", protocol, "--rpc-url", ernie.rpc_address]) == 0
    doc = json.loads(out_json.read_text())
    (level,) = doc["levels"]
    assert doc["protocol"] == protocol and doc["rpc_url"] == ernie.rpc_address
    assert level["requests"] == 9 and level["ok"] == 6 and level["errors"] == {"500": 3}
    assert level["op_stats"]["cls"]["items"] == 9  # /metrics is still read at --url
