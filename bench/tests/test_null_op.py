"""The null-op bench's pieces, without servers: the client's response parsing
and statistics, CPU accounting from /proc, the table and its RATIO line, the
peer environments' pins, the batchline null op itself."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest

from bench.lib import null_contenders
from bench.lib.http_load import HttpError, HttpRequest, LoadResult, latency_summary_ms, parse_response, percentile
from bench.lib.measure import cpu_seconds, cpu_used, tree_cpu_seconds
from bench.lib.null_op import LengthRunner, NullOp, null_config
from bench.lib.null_run import cpu_pct, failure_hint
from bench.lib.null_table import format_table, ratio_line, ratios
from bench.lib.venvs import VenvSpec


def test_parse_response_by_content_length_keeps_what_follows():
    buf = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1"
    assert parse_response(buf) == (200, b"hello", len(buf) - len(b"HTTP/1.1"), False)
    assert parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel") is None
    assert parse_response(b"HTTP/1.1 200 OK\r\nContent-Le") is None


def test_parse_response_reads_chunks_and_connection_close():
    buf = b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    assert parse_response(buf) == (503, b"abcde", len(buf), True)
    assert parse_response(buf[:-2]) is None


def test_parse_response_refuses_what_it_cannot_delimit():
    with pytest.raises(HttpError):
        parse_response(b"HTTP/1.1 200 OK\r\n\r\nbody")
    with pytest.raises(HttpError):
        parse_response(b"garbage\r\n\r\n")


def test_request_wire_has_the_body_and_its_length():
    wire = HttpRequest("/x", b'{"a": 1}').wire("127.0.0.1", 80)
    head, body = wire.split(b"\r\n\r\n")
    assert head.startswith(b"POST /x HTTP/1.1\r\n") and b"Content-Length: 8" in head and body == b'{"a": 1}'


def test_percentiles_and_summary():
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile(values, 0.5) == pytest.approx(0.050)
    assert percentile(values, 0.99) == pytest.approx(0.099)
    assert math.isnan(percentile([], 0.5))
    summary = latency_summary_ms(list(reversed(values)))
    assert summary == {"n": 100, "p50": 50.0, "p99": 99.0, "max": 100.0}
    result = LoadResult(clients=4, seconds=2.0, ok=10, latencies_s=values[:10])
    assert result.rate == 5.0 and result.to_dict()["req_per_s"] == 5.0


def test_cpu_accounting_from_proc_sees_this_process_work():
    before = tree_cpu_seconds([os.getpid()])
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    after = tree_cpu_seconds([os.getpid()])
    assert os.getpid() in after
    assert 0.1 <= cpu_used(before, after) < 5.0
    assert cpu_seconds(os.getpid()) >= after[os.getpid()]
    assert cpu_pct(1.5, 1.0) == 150.0 and math.isnan(cpu_pct(1.0, 0.0))


ROWS = [
    {
        "key": "batchline",
        "title": "batchline",
        "req_per_s": 1000.0,
        "lone_p50_ms": 0.8,
        "lone_p99_ms": 1.9,
        "server_cpu_pct": 107.0,
        "client_cpu_pct": 10.0,
        "errors": 0,
    },
    {
        "key": "mosec",
        "title": "mosec",
        "req_per_s": 20000.0,
        "lone_p50_ms": 2.7,
        "lone_p99_ms": 3.6,
        "server_cpu_pct": 124.0,
        "client_cpu_pct": 40.0,
        "errors": 0,
    },
    {"key": "pytriton", "title": "Triton", "failed": "exited with 1"},
]


def test_table_has_a_line_per_server_and_says_which_could_not_run():
    table = format_table(ROWS, clients=64).splitlines()
    assert table[0].startswith("| server | req/s at 64 clients |") and len(table) == 2 + len(ROWS)
    assert "| 20,000 | 2.70 / 3.60 | 124% | 40% | 0 |" in table[3]
    assert "could not run: exited with 1" in table[4]


def test_ratio_line_divides_ours_by_each_peer():
    assert ratios(ROWS) == {"mosec": 0.05}
    line = ratio_line(ROWS)
    assert line.startswith("RATIO null_op") and "0.05x mosec" in line and "pytriton did not run" in line
    assert "n/a mosec" in ratio_line([{**ROWS[0], "failed": "x"}, ROWS[1]])


def test_failure_hint_prefers_the_cause_over_the_timeout_after_it():
    log = "x\\nTimeoutError: waited\\n y AttributeError: 'RLock' has no attribute\\n"
    assert failure_hint(log) == ": AttributeError: 'RLock' has no attribute"
    assert failure_hint("TimeoutError: waited") == ": TimeoutError: waited"
    assert failure_hint("all fine") == ""


def test_venv_specs_pin_exact_versions_and_want_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    spec = VenvSpec("thing", (("thing", "1.2.3"),), ("thing[extra]==1.2.3",))
    assert spec.folder == os.path.join(str(tmp_path), "venv-peer-thing-1.2.3")
    assert spec.missing({"thing": "1.2.3"}) == [] and spec.missing({"thing": None}) == ["thing==1.2.3"]
    for s in null_contenders.SPECS:
        assert all(version.count(".") == 2 for _, version in s.pinned), s


def test_every_contender_checks_answers_by_the_text_length():
    n = len(null_contenders.TEXT)
    answers = {
        "/null/prediction": json.dumps({"err_no": 0, "key": ["null"], "value": [json.dumps({"length": n})]}),
        "/v2/models/null/infer": json.dumps({"outputs": [{"name": "length", "data": [n]}]}),
        "/null/predict": json.dumps({"results": [{"length": n}]}),
    }
    for c in null_contenders.contenders():
        good = answers.get(c.request.path, json.dumps({"length": n})).encode()
        assert c.request.check(good), c.key
        assert not c.request.check(good.replace(str(n).encode(), b"1")), c.key
        assert not c.request.check(b"not json"), c.key


def test_null_op_answers_each_text_length_in_one_batch():
    from serving.config import parse_config

    config = parse_config(null_config(instances=2))
    conf = config.op["null"].local_service_conf
    assert (conf.instance_num, conf.max_batch_size, conf.max_queue_delay) == (2, 32, 1.0)
    op = NullOp.__new__(NullOp)  # the hooks below use no context
    (sub,) = op.collate(["ab", "", "xyz"])
    outputs = LengthRunner().run(sub.feed)
    assert [op.postprocess(None, o) for o in op.uncollate(sub, outputs)] == [
        {"length": 2},
        {"length": 0},
        {"length": 3},
    ]
    assert isinstance(sub.feed["x"], np.ndarray)
