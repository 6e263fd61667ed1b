"""PipelineClient, `batchline predict` and `batchline bench` against the real app.

Every server here is the real one (:class:`tests.support.live_app.LiveApp`:
``serving.server.Server`` with waitress, the Flask app and a started
Pipeline, on a free port in a background thread) running model-free ops
(tests/support/client_fakes.py): an OCR-shaped pipeline ``ocr`` (det -> rec)
and a text classifier ``ernie``. Every status a test sees is one the server
really gives. Failures are triggered by input (a marked image, a trigger
text) or by real limits and admission; an op that holds its batch until the
test releases it keeps "slow" deterministic. Tests assert behaviour — counts
and statuses — never speed.

The one answer a batchline server never gives, HTTP 200 with ``err_no`` != 0
(Paddle Serving's own servers do), is tested on the client's response
handling in tests/unit/test_client_answers.py.
"""

import json
import os
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
from PIL import Image

from client import bench as bench_cmd
from client import cli as predict_cmd
from client.loadgen import poisson_arrivals
from client.pipeline_client import PROTOCOLS, PipelineClient, PipelineError
from client.stats import MetricsSnapshot, op_stats
from tests.support.client_fakes import (
    BAD,
    BOOM,
    HOLD,
    OVERLOADED,
    ocr_config,
    ocr_lines,
    padded_pixels,
    text_config,
)
from tests.support.image_fakes import encode_png, make_image
from tests.support.live_app import LiveApp
from tests.support.server_process import free_port, run_batchline

SIZES = [(120, 40), (64, 32), (200, 50)]
TOKEN_VARS = ("BATCHLINE_AUTH_TOKEN",)


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    for var in TOKEN_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def image_dir(tmp_path):
    d = tmp_path / "imgs"
    d.mkdir()
    for i, (w, h) in enumerate(SIZES):
        Image.new("RGB", (w, h), (255, 255, 255)).save(d / f"img{i}.png")
    (d / "notes.txt").write_text("not an image")
    return d


@pytest.fixture
def bad_image(tmp_path):
    p = tmp_path / "broken.jpg"
    p.write_bytes(b"definitely not a jpeg")
    return p


def wait_until(condition, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        time.sleep(0.005)


def predict_in_background(pool: ThreadPoolExecutor, url: str, name: str, **kwargs):
    """A future of ``predict`` sent from another thread, with its own client."""

    def send():
        with PipelineClient(url) as c:
            return c.predict(name, **kwargs)

    return pool.submit(send)


# ----------------------------------------------------------------------------- PipelineClient


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_predict_image_forms_and_several_per_request(ocr, image_dir, protocol):
    arr = np.zeros((30, 90, 3), np.uint8)  # numpy BGR array -> PNG
    with PipelineClient(ocr.url) as c:
        by_path = c.predict("ocr", image=str(image_dir / "img0.png"), protocol=protocol)
        by_bytes = c.predict("ocr", image=(image_dir / "img1.png").read_bytes(), protocol=protocol)
        by_array = c.predict("ocr", image=arr, protocol=protocol)
        by_pil = c.predict("ocr", image=Image.new("L", (33, 21)), protocol=protocol)
        many = c.predict("ocr", images=[image_dir / "img2.png", arr, str(image_dir / "img0.png")], protocol=protocol)
    assert by_path == [ocr_lines(120, 40)]
    assert by_path[0][1]["text"] == "你好 world" and by_path[0][1]["score"] == pytest.approx(0.875)
    assert by_bytes == [ocr_lines(64, 32)]
    assert by_array == [ocr_lines(90, 30)]
    assert by_pil == [ocr_lines(33, 21)]
    assert many == [ocr_lines(200, 50), ocr_lines(90, 30), ocr_lines(120, 40)]  # one result per input, in order


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_predict_texts(ernie, protocol):
    with PipelineClient(ernie.url) as c:
        one = c.predict("ernie", text="good", protocol=protocol)
        res = c.predict("ernie", texts=["这个很好", "bad", "good day"], protocol=protocol)
    assert one == [{"label": "positive", "score": 0.9, "probs": [0.1, 0.9]}]
    assert [r["label"] for r in res] == ["positive", "negative", "positive"]
    assert res[1]["probs"] == [0.9, 0.1]


def test_predict_raw_and_payload_fields(ernie):
    with PipelineClient(ernie.url) as c:
        body = c.predict_raw(
            "ernie", {"key": ["text"], "value": ["good"], "logid": 42, "priority": 1, "timeout_ms": 500}
        )
        native = c.predict_raw("ernie", {"inputs": [{"text": "meh"}], "timing": True}, protocol="native")
        with pytest.raises(PipelineError) as info:  # the server checks what it is sent: 2 priority levels
            c.predict("ernie", text="good", priority=2)
    assert body["err_no"] == 0 and body["err_msg"] == "" and body["logid"] == 42 and body["key"] == ["result"]
    assert json.loads(body["value"][0])["label"] == "positive"
    assert native["results"][0]["label"] == "negative" and "cls" in native["timing"][0]["ops"]
    assert info.value.status == 400 and "priority" in info.value.message


def _error_status_in_body(body: str, protocol: str) -> int:
    doc = json.loads(body)
    return doc["err_no"] if protocol == "paddle" else doc["error"]["status"]


@pytest.mark.parametrize(
    "server, inputs, status, fragment",
    [
        ("ocr", {"image": b"not an image"}, 400, "image"),
        ("ernie", {"text": BAD}, 400, "rejected"),
        ("ernie", {"texts": ["a"] * 5}, 413, "limit 4"),  # max_inputs_per_request
        ("ocr", {"image": np.zeros((300, 400, 3), np.uint8)}, 413, "limit is 100000"),  # max_image_pixels
        ("ocr", {"image": os.urandom(1_100_000)}, 413, "max_body_size"),  # over 1 MiB raw (and in base64)
        ("ernie", {"text": BOOM}, 500, "injected predictor failure"),
    ],
)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_error_statuses_raise(request, server, inputs, status, fragment, protocol):
    url = request.getfixturevalue(server).url
    with PipelineClient(url) as c, pytest.raises(PipelineError) as info:
        c.predict(server, protocol=protocol, **inputs)
    assert info.value.status == status
    assert fragment in info.value.message
    assert info.value.retry_after is None
    assert _error_status_in_body(info.value.body, protocol) == status  # err_no is the HTTP status


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_body_far_over_the_limit_is_refused_by_waitress_in_the_protocols_json(live_app, protocol):
    live = live_app(ocr_config(max_body_size=100_000))  # waitress refuses it unread, from Content-Length
    with PipelineClient(live.url) as c, pytest.raises(PipelineError) as info:
        c.predict("ocr", image=os.urandom(300_000), protocol=protocol)
    assert info.value.status == 413 and "max_body_size (100000 bytes)" in info.value.message
    assert _error_status_in_body(info.value.body, protocol) == 413


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unknown_pipeline_404(ocr, protocol):
    with PipelineClient(ocr.url) as c, pytest.raises(PipelineError) as info:
        c.predict("nope", text="x", protocol=protocol)
    assert info.value.status == 404 and "nope" in info.value.message
    assert _error_status_in_body(info.value.body, protocol) == 404


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_op_overloaded_503_carries_retry_after(ernie, protocol):
    with PipelineClient(ernie.url) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text=OVERLOADED, protocol=protocol)
    assert info.value.status == 503 and info.value.retry_after == 1.0
    assert "overloaded" in info.value.message


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_admission_503_at_max_queue_size(live_app, protocol):
    live = live_app(text_config(max_queue_size=1))
    with ThreadPoolExecutor(1) as pool:
        try:
            held = predict_in_background(pool, live.url, "ernie", text=HOLD)
            wait_until(lambda: live.pipeline.in_flight == 1)  # the held request has the only slot
            with PipelineClient(live.url) as c, pytest.raises(PipelineError) as info:
                c.predict("ernie", text="good", protocol=protocol)
        finally:
            live.op("cls").release()
        assert held.result(timeout=30)[0]["label"] == "negative"
    assert info.value.status == 503 and info.value.retry_after >= 1
    assert "max_queue_size 1" in info.value.message
    # the slot is free again (the engine counts a request out just after its answer is ready)
    wait_until(lambda: live.pipeline.in_flight == 0)
    with PipelineClient(live.url) as c:
        assert c.predict("ernie", text="good", protocol=protocol)[0]["label"] == "positive"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_deadline_504(live_app, protocol):
    live = live_app(text_config())
    try:
        with PipelineClient(live.url) as c, pytest.raises(PipelineError) as info:
            c.predict("ernie", text=HOLD, timeout_ms=50, protocol=protocol)
    finally:
        live.op("cls").release()
    assert info.value.status == 504 and info.value.message  # where the deadline struck depends on timing
    assert _error_status_in_body(info.value.body, protocol) == 504


def test_bearer_token(live_app):
    live = live_app(text_config(auth_token="s3cret"))
    with PipelineClient(live.url) as anon:
        with pytest.raises(PipelineError) as info:
            anon.predict("ernie", text="good")
        assert info.value.status == 401
        with pytest.raises(PipelineError) as info:
            anon.metrics_text()
        assert info.value.status == 401
        assert anon.health_ready() is True  # probes need no token
    with PipelineClient(live.url, token="wrong") as bad, pytest.raises(PipelineError) as info:
        bad.predict("ernie", text="good", protocol="native")
    assert info.value.status == 401
    with PipelineClient(live.url, token="s3cret") as good:
        assert good.predict("ernie", text="good")[0]["label"] == "positive"
        assert "batchline_op_items_total" in good.metrics_text()


def test_connection_error_is_status_0():
    with PipelineClient(f"http://127.0.0.1:{free_port()}", timeout=2) as c:
        with pytest.raises(PipelineError) as info:
            c.predict("ocr", text="x")
        assert info.value.status == 0
        assert c.health_ready() is False


def test_health_and_config(ocr):
    with PipelineClient(ocr.url) as c:
        assert c.health_ready() is True and c.health_live() is True
        ops = c.config("ocr")
        assert [op["op"] for op in ops] == ["det", "rec"]
        assert ops[1]["inputs"] == ["det"] and ops[0]["max_batch_size"] == 4
        with pytest.raises(PipelineError) as info:
            c.config("nope")
        assert info.value.status == 404


def test_not_ready_until_the_pipeline_has_started(live_app):
    live = live_app(text_config(hold_load=True), wait_ready=False)  # cls's load() waits for release()
    with PipelineClient(live.url) as c:
        assert c.health_live() is True
        assert c.health_ready() is False
        with pytest.raises(PipelineError) as info:
            c.predict("ernie", text="good")
        assert info.value.status == 503 and info.value.retry_after is not None
        live.op("cls").release()
        live.wait_ready()
        assert c.health_ready() is True
        assert c.predict("ernie", text="good")[0]["label"] == "positive"


def test_metrics_scrape_and_op_stats(ocr, image_dir):
    with PipelineClient(ocr.url) as c:
        before = MetricsSnapshot.from_text(c.metrics_text())
        c.predict("ocr", images=[image_dir / f"img{i}.png" for i in range(len(SIZES))])
        after = MetricsSnapshot.from_text(c.metrics_text())
    stats = op_stats(before, after)
    det, rec = stats["det"], stats["rec"]
    assert det["items"] == 3 and rec["items"] == 6  # two lines per image
    assert 1 <= det["batches"] <= 3 and det["mean_batch_size"] == pytest.approx(3 / det["batches"])
    real = sum(w * h for w, h in SIZES)
    assert det["padding_ratio"] == pytest.approx(1 - real / sum(padded_pixels(w, h) for w, h in SIZES))
    assert det["mean_queue_wait_ms"] >= 0 and det["mean_run_ms"] >= 0
    assert rec["padding_ratio"] is None  # rec reports no padding


# ----------------------------------------------------------------------------- batchline predict


def _predict(argv):
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def batchline(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the ``batchline`` console entry point (``serving.cli``) in a child process."""
    return run_batchline(*argv, env=env, unset=TOKEN_VARS)


def test_cli_predict_dir_and_file(ocr, image_dir, capsys):
    rc = _predict(["--url", ocr.url, str(image_dir), str(image_dir / "img1.png")])
    out = capsys.readouterr().out
    assert rc == 0
    blocks = [line for line in out.splitlines() if line.startswith("== ")]
    assert blocks == [f"== {image_dir / n}" for n in ("img0.png", "img1.png", "img2.png", "img1.png")]
    assert "120x40\t0.9900" in out and "你好 world\t0.8750" in out
    assert "notes.txt" not in out


def test_cli_predict_json_and_text(ocr, ernie, image_dir, capsys):
    rc = _predict(["--url", ocr.url, "--json", "--protocol", "native", str(image_dir / "img0.png")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and json.loads(out[1]) == ocr_lines(120, 40)
    rc = _predict(["--url", ernie.url, "--pipeline", "ernie", "--text", "很好", "--text", "meh"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out == "== 很好\npositive\t0.9000\n== meh\nnegative\t0.9000\n"


def test_cli_predict_failure_exit_1(ocr, ernie, image_dir, bad_image, capsys):
    rc = _predict(["--url", ocr.url, str(bad_image), str(image_dir / "img0.png")])
    cap = capsys.readouterr()
    assert rc == 1
    assert "HTTP 400" in cap.err and "broken.jpg" in cap.err
    assert "120x40" in cap.out  # the good image still went through
    rc = _predict(["--url", ernie.url, "--pipeline", "ernie", "--text", "good", "--text", BOOM])
    cap = capsys.readouterr()
    assert rc == 1 and "HTTP 500" in cap.err and "positive" in cap.out
    rc = _predict(["--url", ocr.url, "--pipeline", "nope", "--text", "x"])
    assert rc == 1 and "HTTP 404" in capsys.readouterr().err
    rc = _predict(["--url", f"http://127.0.0.1:{free_port()}", "--timeout", "2", "--text", "x"])
    assert rc == 1 and "status 0" in capsys.readouterr().err


def test_cli_predict_nothing_to_send(ocr, capsys):
    assert _predict(["--url", ocr.url]) == 1
    assert _predict(["--url", ocr.url, "/no/such/file.png"]) == 1
    assert "no image found" in capsys.readouterr().err


def test_cli_predict_token(live_app, image_dir, capsys):
    live = live_app(ocr_config(auth_token="t0k"))
    assert _predict(["--url", live.url, str(image_dir / "img0.png")]) == 1
    assert "HTTP 401" in capsys.readouterr().err
    assert _predict(["--url", live.url, "--token", "t0k", str(image_dir / "img0.png")]) == 0


def test_cli_predict_draw(ocr, image_dir, tmp_path, capsys):
    out_dir = tmp_path / "vis"
    rc = _predict(["--url", ocr.url, "--draw", str(out_dir), str(image_dir)])
    assert rc == 0
    files = sorted(os.listdir(out_dir))
    assert files == ["img0.png", "img1.png", "img2.png"]
    for name, (w, h) in zip(files, SIZES):
        with Image.open(out_dir / name) as img:
            assert img.size == (2 * w, h)  # image | text panel
            right = np.asarray(img.convert("RGB"))[:, w:]
            assert (right < 128).any()  # text/boxes were drawn


def test_batchline_predict_command_output_and_exit_codes(ocr, image_dir, bad_image):
    ok = batchline("predict", "--url", ocr.url, str(image_dir / "img1.png"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == f"== {image_dir / 'img1.png'}\n64x32\t0.9900\n你好 world\t0.8750\n"
    failed = batchline("predict", "--url", ocr.url, str(bad_image))
    assert failed.returncode == 1 and "HTTP 400" in failed.stderr and failed.stdout == ""


# ----------------------------------------------------------------------------- the token variable


def test_token_from_batchline_auth_token_end_to_end(live_app, image_dir):
    live = live_app(ocr_config(auth_token="t0k"))
    image = str(image_dir / "img0.png")
    without = batchline("predict", "--url", live.url, image)
    assert without.returncode == 1 and "HTTP 401" in without.stderr
    with_env = batchline("predict", "--url", live.url, image, env={"BATCHLINE_AUTH_TOKEN": "t0k"})
    assert with_env.returncode == 0, with_env.stderr
    assert "120x40\t0.9900" in with_env.stdout and "notice" not in with_env.stderr
    old = batchline("predict", "--url", live.url, image, env={"BATCHLINE_TOKEN": "t0k"})
    assert old.returncode == 1 and "HTTP 401" in old.stderr  # the deprecated name is no longer read


def test_bench_reads_the_token_variable(live_app, tmp_path, monkeypatch, capsys):
    live = live_app(text_config(auth_token="t0k"))
    texts = tmp_path / "t.txt"
    texts.write_text("good\n")
    out_json = tmp_path / "t.json"
    argv = ["--url", live.url, "--pipeline", "ernie", "--text-file", str(texts), "--concurrency", "1"]
    argv += ["--duration", "60", "--warmup", "0", "--max-requests", "3", "--json", str(out_json)]
    assert _bench(argv) == 1  # no token: every request is refused
    assert json.loads(out_json.read_text())["levels"][0]["errors"] == {"401": 3}
    assert "no request succeeded" in capsys.readouterr().err
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", "t0k")
    assert _bench(argv) == 0
    assert json.loads(out_json.read_text())["levels"][0]["ok"] == 3
    assert "notice" not in capsys.readouterr().err


# ----------------------------------------------------------------------------- batchline bench


def _bench(argv):
    return bench_cmd.main(bench_cmd.build_parser().parse_args(argv))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bench_closed_loop_exact_counts_json_and_plot(ocr, image_dir, tmp_path, capsys, protocol):
    inputs = tmp_path / "bench_imgs"
    inputs.mkdir()
    for i in range(len(SIZES)):
        shutil.copy(image_dir / f"img{i}.png", inputs / f"img{i}.png")
    (inputs / "img3_overloaded.png").write_bytes(encode_png(make_image(40, 20, fault="overloaded")))
    out_json, out_png = tmp_path / "run.json", tmp_path / "run.png"
    rc = _bench(
        [
            "--url",
            ocr.url,
            "--pipeline",
            "ocr",
            "--inputs",
            str(inputs),
            "--concurrency",
            "1,4",
            "--duration",
            "60",
            "--warmup",
            "0",
            "--max-requests",
            "20",
            "--label",
            "on",
            "--protocol",
            protocol,
            "--json",
            str(out_json),
            "--plot",
            str(out_png),
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out_json.read_text())
    assert doc["label"] == "on" and doc["mode"] == "closed" and doc["pipeline"] == "ocr"
    levels = doc["levels"]
    assert [lv["concurrency"] for lv in levels] == [1, 4]
    # requests 0..19 cycle through the 4 sorted images: every 4th is the one det refuses with 503
    real = sum(w * h for w, h in SIZES)
    padded = sum(padded_pixels(w, h) for w, h in SIZES)
    for lv in levels:
        assert lv["requests"] == 20 and lv["ok"] == 15
        assert lv["errors"] == {"503": 5}
        assert lv["label"] == "on"
        assert lv["qps"] > 0 and lv["latency_ms"]["p99"] >= lv["latency_ms"]["p50"] > 0
        det, rec = lv["op_stats"]["det"], lv["op_stats"]["rec"]
        assert det["items"] == 15 and rec["items"] == 30
        assert 1 <= det["mean_batch_size"] <= lv["concurrency"]
        assert det["padding_ratio"] == pytest.approx(1 - real / padded)  # 5 of each good image
        assert det["mean_queue_wait_ms"] >= 0
    one = levels[0]["op_stats"]["det"]
    assert one["batches"] == 15 and one["mean_batch_size"] == 1.0  # one request at a time
    assert "c=4" in cap.out and "503:5" in cap.out
    assert re.search(r"c=1\s+det\s+1\.00\s", cap.out), cap.out  # the ops table: one request at a time
    assert "c=1" not in cap.err  # no progress: stderr is no terminal and --progress was not given
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_text_file_and_native(ernie, tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text(f"good\nbad\n\n{BOOM}\n", encoding="utf-8")
    out_json = tmp_path / "t.json"
    rc = _bench(
        [
            "--url",
            ernie.url,
            "--pipeline",
            "ernie",
            "--text-file",
            str(texts),
            "--protocol",
            "native",
            "--concurrency",
            "2",
            "--duration",
            "60",
            "--warmup",
            "0",
            "--max-requests",
            "9",
            "--json",
            str(out_json),
        ]
    )
    assert rc == 0
    (lv,) = json.loads(out_json.read_text())["levels"]
    assert lv["requests"] == 9 and lv["errors"] == {"500": 3} and lv["ok"] == 6
    cls = lv["op_stats"]["cls"]
    assert cls["items"] == 9  # the failing item ran too (and failed again alone)
    assert 1 <= cls["mean_batch_size"] <= 2


def test_bench_open_loop(ocr, image_dir, tmp_path, capsys):
    out_json = tmp_path / "open.json"
    rc = _bench(
        [
            "--url",
            ocr.url,
            "--inputs",
            str(image_dir / "*.png"),
            "--rate",
            "40",
            "--duration",
            "0.5",
            "--warmup",
            "0",
            "--seed",
            "3",
            "--max-in-flight",
            "8",
            "--json",
            str(out_json),
            "--progress",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0
    (lv,) = json.loads(out_json.read_text())["levels"]
    assert lv["mode"] == "open" and lv["rate"] == 40
    assert lv["ok"] + lv["failed"] + lv["dropped"] == len(poisson_arrivals(40, 0.5, 3))
    assert lv["failed"] == 0
    assert "rate=40/s" in cap.err and "ok=" in cap.err and "40/s" in cap.out  # --progress: shown off a terminal


def test_bench_plot_overlays_from_files(tmp_path, capsys):
    def run(label, qps):
        return {
            "label": label,
            "mode": "closed",
            "levels": [
                {
                    "mode": "closed",
                    "concurrency": c,
                    "rate": None,
                    "requests": 10,
                    "qps": q,
                    "errors": {},
                    "dropped": 0,
                    "latency_ms": {"p50": 1.0, "p90": 2.0, "p99": None},
                    "op_stats": {},
                }
                for c, q in zip((1, 4, 16), qps)
            ],
        }

    a, b = tmp_path / "on.json", tmp_path / "off.json"
    a.write_text(json.dumps(run("batching on", [10, 35, 60])))
    b.write_text(json.dumps(run("", [10, 15, 16])))
    png = tmp_path / "cmp.png"
    assert _bench(["--plot", str(png), "--from", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "== batching on" in out and "== off" in out  # empty label -> file name
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bench_errors(ocr, tmp_path, capsys):
    assert _bench(["--pipeline", "ocr"]) == 1  # neither --url nor --from
    assert _bench(["--url", ocr.url, "--duration", "1"]) == 1  # no inputs
    assert "no inputs" in capsys.readouterr().err
    texts = tmp_path / "t.txt"
    texts.write_text("x\n")
    rc = _bench(
        [
            "--url",
            f"http://127.0.0.1:{free_port()}",
            "--text-file",
            str(texts),
            "--concurrency",
            "1",
            "--duration",
            "5",
            "--warmup",
            "0",
            "--max-requests",
            "3",
            "--timeout",
            "2",
        ]
    )
    assert rc == 1 and "no request succeeded" in capsys.readouterr().err


def test_a_drained_server_closes_every_connection_and_its_loop_ends():
    """Regression (on waitress, the front then): the drain closed its listening socket from the
    draining thread, leaving keep-alive connections open and the loop running; closing sockets under a select() in the
    loop thread could also kill it with EBADF (an unhandled thread exception in the test run)."""
    failures = []
    previous = threading.excepthook
    threading.excepthook = lambda args: failures.append(args.exc_value)
    try:
        for _ in range(3):
            before = set(threading.enumerate())
            live = LiveApp(text_config())
            with requests.Session() as keep_alive:  # a keep-alive connection still open at drain time
                assert keep_alive.get(live.url + "/health/live", timeout=10).status_code == 200
                live.close()
                loops = [t for t in set(threading.enumerate()) - before if t.name == "http-loop"]
                assert not loops, "the loop still runs"
                with pytest.raises(requests.ConnectionError):
                    keep_alive.get(live.url + "/health/live", timeout=10)
    finally:
        threading.excepthook = previous
    assert not failures, failures
