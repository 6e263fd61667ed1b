"""The served-rec bench's own logic, without servers or models: the order
crops are sent in, the requests and where each server puts the text, the
bare-engine loop's counting, and the table and RATIO line."""

from __future__ import annotations

import base64
import itertools
import json

import pytest

import bench.lib.bare_rec as bare_rec
from bench.lib.http_load import round_robin
from bench.lib.served_rec_contenders import (
    COULD_NOT_RUN,
    contenders,
    mosec_request,
    native_request,
    native_text,
    paddle_request,
    paddle_text,
    plain_text,
)
from bench.lib.served_rec_table import format_table, of_bare, ratio_line

PNG = b"\x89PNG\r\n\x1a\nnot really"


def test_round_robin_goes_round_every_request():
    assert list(itertools.islice(round_robin(3), 7)) == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(ValueError):
        round_robin(0)


def test_native_and_mosec_requests_send_the_png_itself():
    for request, path in ((native_request(PNG), "/rec/predict"), (mosec_request(PNG), "/inference")):
        assert (request.path, request.content_type, request.body) == (path, "image/png", PNG)
        assert request.wire("h", 1).endswith(b"\r\n\r\n" + PNG)


def test_paddle_request_sends_base64_json():
    doc = json.loads(paddle_request(PNG).body)
    assert doc["key"] == ["image"] and base64.b64decode(doc["value"][0]) == PNG


def test_the_text_of_each_answer_and_none_for_what_is_not_one():
    assert native_text(b'{"results": [{"text": "abc", "score": 0.9}]}') == "abc"
    value = json.dumps({"text": "\u4e2d\u6587", "score": 0.9})
    assert paddle_text(json.dumps({"err_no": 0, "key": ["result"], "value": [value]}).encode()) == "\u4e2d\u6587"
    assert paddle_text(b'{"err_no": 0, "value": [{"text": "x"}]}') == "x"
    assert plain_text(b'{"text": "abc", "score": 0.9}') == "abc"
    for pick in (native_text, paddle_text, plain_text):
        assert pick(b"not json") is None and pick(b"{}") is None
    assert paddle_text(b'{"err_no": 1, "err_msg": "busy", "value": []}') is None
    assert native_request(PNG).check(b'{"results": [{"text": "", "score": 0}]}')
    assert not native_request(PNG).check(b'{"error": "x"}')


def test_contenders_are_distinct_and_name_their_commands():
    keys = [c.key for c in contenders()]
    assert len(set(keys)) == len(keys) and not set(keys) & set(COULD_NOT_RUN)
    mosec = {c.key: c.argv("py", 8123) for c in contenders() if c.key.startswith("mosec")}
    assert mosec["mosec_b1"][mosec["mosec_b1"].index("--max-batch") + 1] == "1"
    assert mosec["mosec_b32"][mosec["mosec_b32"].index("--max-batch") + 1] == "32"
    assert all("--port" in argv and "8123" in argv for argv in mosec.values())


def test_bare_engine_loop_counts_only_its_window_and_uses_every_runner(monkeypatch):
    used = []
    monkeypatch.setattr(bare_rec, "read_crop", lambda op, runner, png: used.append((runner, png)) or ("t", 1.0))
    result = bare_rec.bare_engine_loop(None, ["r0", "r1"], [b"a", b"b", b"c"], duration_s=1.0, warmup_s=0.05)
    assert result.clients == 2 and 0 < result.ok <= len(used) and len(result.latencies_s) == result.ok
    assert {r for r, _ in used} == {"r0", "r1"} and {p for _, p in used} == {b"a", b"b", b"c"}


class _Handle:
    def __init__(self, image):
        self.image = image

    def result(self):
        if self.image == "bad":
            raise RuntimeError("a failed request")
        return {"text": f"text of {self.image}", "score": 1.0}


class _Pipeline:
    started = stopped = False

    def __init__(self, config):
        self.config = config
        _Pipeline.seen = []

    def start(self):
        _Pipeline.started = True

    def submit(self, image):
        _Pipeline.seen.append(image)
        return _Handle(image)

    def shutdown(self, timeout=None):
        _Pipeline.stopped = True


def test_the_engine_loop_runs_the_configs_pipeline_reads_texts_first_and_counts_failures(monkeypatch):
    import serving.batching.pipeline
    import serving.config

    monkeypatch.setattr(serving.config, "load_config", lambda path: {"path": path})
    monkeypatch.setattr(serving.batching.pipeline, "Pipeline", _Pipeline)
    monkeypatch.setattr(bare_rec, "decode_png", lambda png: png.decode())
    crops = [b"a", b"b", b"bad"]
    result, texts = bare_rec.engine_loop("cfg.yml", crops, clients=3, duration_s=0.2, warmup_s=0.05, texts=2)
    assert texts == ["text of a", "text of b"] and _Pipeline.seen[:2] == ["a", "b"]
    assert result.clients == 3 and result.ok > 0 and result.errors > 0 and "a failed request" in result.first_error
    assert set(_Pipeline.seen) == {"a", "b", "bad"} and _Pipeline.started and _Pipeline.stopped


ROWS = [
    {"key": "bare", "title": "bare", "crops_per_s": 100.0, "latency_ms": {"p50": 20, "p99": 30}},
    {"key": "batchline", "title": "ours", "crops_per_s": 80.0, "latency_ms": {"p50": 300, "p99": 700}, "agree": "8/8"},
    {"key": "mosec_b1", "title": "mosec", "crops_per_s": 64.0, "latency_ms": {"p50": 400, "p99": 600}},
    {"key": "pytriton_b1", "title": "triton", "failed": "does not start"},
]


def test_table_gives_each_server_its_share_of_the_bare_engine():
    assert of_bare(ROWS) == {"batchline": 0.8, "mosec_b1": 0.64}
    table = format_table(ROWS, 32).splitlines()
    assert table[0].startswith("| served rec, 32 clients |")
    assert table[2] == "| bare | 100.0 | 1.00 (limit) | — | 0 | — |"
    assert table[3] == "| ours | 80.0 | 0.80 | 300 / 700 | 0 | 8/8 |"
    assert "could not run: does not start" in table[5]


def test_ratio_line_and_a_run_without_the_bare_engine():
    assert ratio_line(ROWS) == (
        "RATIO served_rec crops/s: batchline 0.80x bare; batchline/peer: 1.25x mosec_b1, pytriton_b1 did not run"
    )
    no_bare = ROWS[1:]
    assert ratio_line(no_bare).startswith("RATIO served_rec crops/s: batchline n/a bare;")
    assert "| ours | 80.0 | — |" in format_table(no_bare, 32)
