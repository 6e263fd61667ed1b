"""PipelineClient, `batchline predict` and `batchline bench` against the fake server.

The fake server (tests/integration/fake_server.py) runs in a background thread
on 127.0.0.1 with a free port. Tests assert behaviour — counts and statuses —
never speed.
"""

import json
import os
import socket

import numpy as np
import pytest
from PIL import Image

from client import bench as bench_cmd
from client import cli as predict_cmd
from client.loadgen import poisson_arrivals
from client.pipeline_client import PipelineClient, PipelineError
from tests.integration.fake_server import FakeConfig, FakeServer

SIZES = [(120, 40), (64, 32), (200, 50)]


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.fixture
def make_server():
    started = []

    def start(**kwargs):
        s = FakeServer(FakeConfig(**kwargs)).__enter__()
        started.append(s)
        return s

    yield start
    for s in started:
        s.__exit__(None, None, None)


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


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- PipelineClient


@pytest.mark.parametrize("protocol", ["paddle", "native"])
def test_predict_image_forms_and_order(server, image_dir, protocol):
    arr = np.zeros((30, 90, 3), np.uint8)  # numpy BGR array -> PNG
    with PipelineClient(server.url) as c:
        by_path = c.predict("ocr", image=str(image_dir / "img0.png"), protocol=protocol)
        by_bytes = c.predict("ocr", image=(image_dir / "img1.png").read_bytes(), protocol=protocol)
        by_array = c.predict("ocr", image=arr, protocol=protocol)
        many = c.predict("ocr", images=[image_dir / "img2.png", arr], text="good day", protocol=protocol)
    assert by_path[0][0]["text"] == "120x40"
    assert by_path[0][0]["score"] == pytest.approx(0.99)
    assert len(by_path[0][0]["box"]) == 4
    assert by_path[0][1]["text"] == "你好 world"
    assert by_bytes[0][0]["text"] == "64x32"
    assert by_array[0][0]["text"] == "90x30"
    assert [r[0]["text"] for r in many[:2]] == ["200x50", "90x30"]
    assert many[2]["label"] == "positive"


def test_predict_texts(server):
    with PipelineClient(server.url) as c:
        res = c.predict("ernie", texts=["这个很好", "bad"])
    assert [r["label"] for r in res] == ["positive", "negative"]
    assert res[0]["probs"] == [0.1, 0.9]


def test_predict_raw_and_payload_fields(server, image_dir):
    with PipelineClient(server.url) as c:
        body = c.predict_raw(
            "ernie", {"key": ["text"], "value": ["good"], "logid": 42, "priority": 1, "timeout_ms": 500}
        )
    assert body["err_no"] == 0 and body["logid"] == 42 and body["key"] == ["result"]
    assert json.loads(body["value"][0])["label"] == "positive"


@pytest.mark.parametrize("text,status", [("__413__", 413), ("__500__", 500), ("__504__", 504)])
@pytest.mark.parametrize("protocol", ["paddle", "native"])
def test_error_statuses_raise(server, text, status, protocol):
    with PipelineClient(server.url) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text=text, protocol=protocol)
    assert info.value.status == status
    assert info.value.message == f"forced {status}"
    assert info.value.retry_after is None
    assert info.value.body


@pytest.mark.parametrize("protocol", ["paddle", "native"])
def test_bad_image_is_400_and_unknown_pipeline_404(server, protocol):
    with PipelineClient(server.url) as c:
        with pytest.raises(PipelineError) as bad:
            c.predict("ocr", image=b"not an image", protocol=protocol)
        with pytest.raises(PipelineError) as missing:
            c.predict("nope", text="x", protocol=protocol)
    assert bad.value.status == 400 and "decode" in bad.value.message
    assert missing.value.status == 404 and "nope" in missing.value.message


def test_overloaded_503_carries_retry_after(make_server):
    s = make_server(fail_every=1)
    with PipelineClient(s.url) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text="good")
    assert info.value.status == 503
    assert info.value.retry_after == 1.0
    assert "overloaded" in info.value.message


def test_err_no_with_http_200_raises(server):
    with PipelineClient(server.url) as c, pytest.raises(PipelineError) as info:
        c.predict("ernie", text="__err_no__")
    assert info.value.status == 200 and info.value.message == "forced err_no"


def test_bearer_token(make_server):
    s = make_server(token="s3cret")
    with PipelineClient(s.url) as anon, pytest.raises(PipelineError) as info:
        anon.predict("ernie", text="good")
    assert info.value.status == 401
    with PipelineClient(s.url, token="wrong") as bad, pytest.raises(PipelineError) as info:
        bad.predict("ernie", text="good")
    assert info.value.status == 401
    with PipelineClient(s.url, token="s3cret") as good:
        assert good.predict("ernie", text="good")[0]["label"] == "positive"


def test_connection_error_is_status_0():
    with PipelineClient(f"http://127.0.0.1:{_free_port()}", timeout=2) as c:
        with pytest.raises(PipelineError) as info:
            c.predict("ocr", text="x")
        assert info.value.status == 0
        assert c.health_ready() is False


def test_health_config_metrics(server, make_server):
    with PipelineClient(server.url) as c:
        assert c.health_ready() is True and c.health_live() is True
        ops = c.config("ocr")
        assert [op["name"] for op in ops] == ["det", "rec"]
        with pytest.raises(PipelineError) as info:
            c.config("nope")
        assert info.value.status == 404
        assert "batchline_op_batch_size_count" in c.metrics_text()
    with PipelineClient(make_server(ready=False).url) as c:
        assert c.health_ready() is False and c.health_live() is True


# ----------------------------------------------------------------------------- batchline predict


def _predict(argv):
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def test_cli_predict_dir_and_file(server, image_dir, capsys):
    rc = _predict(["--url", server.url, str(image_dir), str(image_dir / "img1.png")])
    out = capsys.readouterr().out
    assert rc == 0
    blocks = [line for line in out.splitlines() if line.startswith("== ")]
    assert blocks == [f"== {image_dir / n}" for n in ("img0.png", "img1.png", "img2.png", "img1.png")]
    assert "120x40\t0.9900" in out and "你好 world\t0.8750" in out
    assert "notes.txt" not in out


def test_cli_predict_json_and_text(server, image_dir, capsys):
    rc = _predict(["--url", server.url, "--json", str(image_dir / "img0.png")])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and json.loads(out[1])[0]["text"] == "120x40"
    rc = _predict(["--url", server.url, "--pipeline", "ernie", "--text", "很好", "--text", "meh"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out == "== 很好\npositive\t0.9000\n== meh\nnegative\t0.9000\n"


def test_cli_predict_failure_exit_1(server, image_dir, bad_image, capsys):
    rc = _predict(["--url", server.url, str(bad_image), str(image_dir / "img0.png")])
    cap = capsys.readouterr()
    assert rc == 1
    assert "HTTP 400" in cap.err and "broken.jpg" in cap.err
    assert "120x40" in cap.out  # the good image still went through
    rc = _predict(["--url", server.url, "--pipeline", "nope", "--text", "x"])
    assert rc == 1 and "HTTP 404" in capsys.readouterr().err
    rc = _predict(["--url", f"http://127.0.0.1:{_free_port()}", "--timeout", "2", "--text", "x"])
    assert rc == 1 and "status 0" in capsys.readouterr().err


def test_cli_predict_nothing_to_send(server, capsys):
    assert _predict(["--url", server.url]) == 1
    assert _predict(["--url", server.url, "/no/such/file.png"]) == 1
    assert "no image found" in capsys.readouterr().err


def test_cli_predict_token(make_server, image_dir, capsys):
    s = make_server(token="t0k")
    assert _predict(["--url", s.url, str(image_dir / "img0.png")]) == 1
    assert "HTTP 401" in capsys.readouterr().err
    assert _predict(["--url", s.url, "--token", "t0k", str(image_dir / "img0.png")]) == 0


def test_cli_predict_draw(server, image_dir, tmp_path, capsys):
    out_dir = tmp_path / "vis"
    rc = _predict(["--url", server.url, "--draw", str(out_dir), str(image_dir)])
    assert rc == 0
    files = sorted(os.listdir(out_dir))
    assert files == ["img0.png", "img1.png", "img2.png"]
    for name, (w, h) in zip(files, SIZES):
        with Image.open(out_dir / name) as img:
            assert img.size == (2 * w, h)  # image | text panel
            right = np.asarray(img.convert("RGB"))[:, w:]
            assert (right < 128).any()  # text/boxes were drawn


# ----------------------------------------------------------------------------- batchline bench


def _bench(argv):
    return bench_cmd.main(bench_cmd.build_parser().parse_args(argv))


def test_bench_closed_loop_exact_counts_json_and_plot(make_server, image_dir, tmp_path, capsys):
    s = make_server(fail_every=5)
    out_json, out_png = tmp_path / "run.json", tmp_path / "run.png"
    rc = _bench(
        [
            "--url",
            s.url,
            "--pipeline",
            "ocr",
            "--inputs",
            str(image_dir),
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
    for lv in levels:  # the fake's counter is global: requests 5,10,15,20 then 25,...,40 fail
        assert lv["requests"] == 20 and lv["ok"] == 16
        assert lv["errors"] == {"503": 4}
        assert lv["label"] == "on"
        assert lv["qps"] > 0 and lv["latency_ms"]["p99"] >= lv["latency_ms"]["p50"] > 0
        det = lv["op_stats"]["det"]
        assert det["batches"] == 16 and det["items"] == 16
        assert det["mean_batch_size"] == pytest.approx(1.0)
        assert det["mean_queue_wait_ms"] == pytest.approx(2.0)
        assert det["padding_ratio"] == pytest.approx(0.2)
    assert "c=4" in cap.out and "503:4" in cap.out and "op det: batch 1.00" in cap.out
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_text_file_and_native(server, tmp_path, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("good\nbad\n\n__500__\n", encoding="utf-8")
    out_json = tmp_path / "t.json"
    rc = _bench(
        [
            "--url",
            server.url,
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
    assert lv["op_stats"]["cls"]["batches"] == 6


def test_bench_open_loop(server, image_dir, tmp_path, capsys):
    out_json = tmp_path / "open.json"
    rc = _bench(
        [
            "--url",
            server.url,
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
    assert "\r[rate=40/s]" in cap.err and "40/s" in cap.out


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


def test_bench_errors(server, tmp_path, capsys):
    assert _bench(["--pipeline", "ocr"]) == 1  # neither --url nor --from
    assert _bench(["--url", server.url, "--duration", "1"]) == 1  # no inputs
    assert "no inputs" in capsys.readouterr().err
    texts = tmp_path / "t.txt"
    texts.write_text("x\n")
    rc = _bench(
        [
            "--url",
            f"http://127.0.0.1:{_free_port()}",
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
