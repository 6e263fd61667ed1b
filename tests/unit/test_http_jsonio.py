"""The HTTP layer's JSON seam (serving/service/jsonio.py): orjson where it agrees
with the standard library, the standard library where it does not, so a body
parses (or is refused, with the same message) and an answer reads exactly as
with ``json`` alone."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from serving.service import jsonio

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)


def outcome(parse, data: bytes):
    try:
        return "ok", repr(parse(data))
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the exception itself
        return type(exc).__name__, str(exc)


def stdlib(data: bytes):
    return json.loads(data.decode("utf-8"))


@given(json_values)
def test_documents_parse_to_the_same_values(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), json.dumps(value, indent=1)):
        data = text.encode("utf-8")
        assert outcome(jsonio.loads, data) == outcome(stdlib, data)


@given(st.binary(max_size=64))
def test_random_bytes_are_accepted_or_refused_as_json_does(data):
    assert outcome(jsonio.loads, data) == outcome(stdlib, data)


@pytest.mark.parametrize(
    "data",
    [
        b"NaN",
        b'{"logid": Infinity}',
        b"1e400",
        b"123456789012345678901234567890",
        b"18446744073709551616",
        b"18446744073709551615",
        b"-9223372036854775809",
        b"1e19",
        b'"\\ud800"',
        b'"\\ud83d\\ude00"',
        b"\xef\xbb\xbf{}",
        b'{"a": 1, "a": 2}',
        b"-0",
        b"[1, 2,]",
        b'"a\x00"',
        b"\xff\xfe{}",
        b"[" * 3000 + b"]" * 3000,
        b'{"x":' * 70 + b"1" + b"}" * 70,
    ],
)
def test_what_orjson_reads_otherwise_is_decided_by_json(data):
    assert outcome(jsonio.loads, data) == outcome(stdlib, data)


@given(json_values)
def test_answers_read_back_as_json_wrote_them(value):
    assert json.loads(jsonio.dumps(value)) == json.loads(json.dumps(value))


def test_answers_keep_utf8_and_convert_numpy_as_before():
    out = {"text": "中文 é", "score": np.float32(0.9876543), "n": np.int64(3), "a": np.arange(2), "ok": np.bool_(True)}
    data = jsonio.dumps(out)
    assert "中文 é".encode() in data  # not \\u-escaped
    before = json.dumps(out, ensure_ascii=False, default=jsonio._plain)
    assert json.loads(data) == json.loads(before)
    assert json.loads(data)["score"] == float(np.float32(0.9876543))  # the float64 value json wrote, not a float32 repr


def test_keys_huge_integers_and_refusals():
    assert json.loads(jsonio.dumps({1: "a", None: "b"})) == json.loads(json.dumps({1: "a", None: "b"}))
    assert jsonio.dumps({"logid": 2**70}) == b'{"logid":1180591620717411303424}'
    assert jsonio.dumps({"b": 1, "a": 2}, sort_keys=True) == b'{"a":2,"b":1}'
    assert jsonio.dumps(float("nan")) == b"null"  # valid JSON, where json wrote NaN
    with pytest.raises(TypeError):
        jsonio.dumps({"x": object()})


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_document_walk_allocates_nothing_per_value():
    """It once built a tuple per value: ~100 bytes each, 300 MB for a 6 MB list of zeros."""
    doc = [0] * 200_000 + [{"a": [1.5] * 1000}] * 100
    assert jsonio._plain_document(doc)
    assert _peak(lambda: jsonio._plain_document(doc)) < 64 << 10


def test_orjson_document_is_dropped_before_json_parses_again(monkeypatch):
    # a huge integer literal (orjson makes it a float) sends the body to json: one document at a time
    data = b'["' + b"a" * 4_000_000 + b'", 100000000000000000000]'
    parse, held = json.loads, []

    def spy(text, *args, **kwargs):
        held.append(tracemalloc.get_traced_memory()[0])  # the decoded text, and orjson's document if kept
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(jsonio.json, "loads", spy)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        assert jsonio.loads(data)[-1] == 10**20
    finally:
        tracemalloc.stop()
    assert held[0] - base < 1.5 * len(data)
