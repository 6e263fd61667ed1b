"""The JSON value and depth bounds checked on a body's bytes before it is
parsed (serving/service/json_budget.py): exact for any document, whatever its
strings hold, and refusing hostile shapes with the status that names them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serving.errors import BadRequest, PayloadTooLarge
from serving.service.json_budget import MAX_DEPTH, check_json_shape, value_budget
from tests.support.fuzz import body_cases

# strings full of what the bytes-level count must not mistake for structure
tricky_text = st.text(alphabet='[]{},:"\\ab\n\u00e9', max_size=12)
documents = st.recursive(
    st.none() | st.integers(-5, 5) | tricky_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(tricky_text, children, max_size=4),
    max_leaves=30,
)


def shape(doc, depth=1) -> tuple[int, int]:
    """(brackets and commas outside strings, nesting depth) of ``json.dumps(doc)``."""
    if not isinstance(doc, (list, dict)):
        return 0, depth - 1
    children = list(doc.values()) if isinstance(doc, dict) else doc
    count, deepest = 1 + max(0, len(children) - 1), depth
    for child in children:
        n, d = shape(child, depth + 1)
        count, deepest = count + n, max(deepest, d)
    return count, deepest


def verdict(data: bytes, max_values: int, max_depth: int) -> str:
    try:
        check_json_shape(data, max_values=max_values, max_depth=max_depth)
    except PayloadTooLarge:
        return "values"
    except BadRequest:
        return "depth"
    return "ok"


@settings(max_examples=300, deadline=None)
@given(documents, st.booleans())
def test_the_bounds_are_exact_whatever_the_strings_hold(doc, ascii_only):
    data = json.dumps(doc, ensure_ascii=ascii_only).encode()
    count, depth = shape(doc)
    assert verdict(data, count, depth) == "ok"
    if count:
        assert verdict(data, count - 1, depth + 1) == "values"
    if depth:
        assert verdict(data, count + 1, depth - 1) == "depth"


def test_a_usual_body_with_text_full_of_structure_is_never_refused():
    text = '{"a": [1, [2]], "b": "\\",[{"}' * 50_000  # many commas, brackets and escaped quotes
    body = json.dumps({"key": ["text"] * 64, "value": [text] * 64, "logid": "x"}).encode()
    check_json_shape(body, max_values=value_budget(64))
    native = json.dumps({"inputs": [{"text": text[:1000]}] * 64}).encode()  # more braces than MAX_DEPTH
    check_json_shape(native, max_values=value_budget(64))


@pytest.mark.parametrize(
    ("build", "refused"),
    [
        (body_cases.logid_zeros_body, PayloadTooLarge),
        (body_cases.nesting_body, BadRequest),
        (body_cases.empty_objects_body, PayloadTooLarge),
        (body_cases.floats_body, PayloadTooLarge),
        (body_cases.many_keys_body, PayloadTooLarge),
    ],
)
def test_hostile_bodies_are_refused_naming_the_bound(build, refused):
    with pytest.raises(refused) as caught:
        check_json_shape(build(1 << 20), max_values=value_budget(8))
    assert ("max_inputs_per_request" if refused is PayloadTooLarge else f"{MAX_DEPTH} levels") in caught.value.message


def test_depth_is_refused_before_the_count_of_its_brackets():
    with pytest.raises(BadRequest):
        check_json_shape(b"[" * 100_000 + b"]" * 100_000, max_values=300)


@pytest.mark.parametrize(
    "data",
    [b"]" * 10_000 + b"[" * 10_000, b'""' * 10_000 + b"[" * 10_000, b'["' + b"\\" * 9_999, b"[" + b'"a",' * 100],
    ids=["closed-first", "strings-without-separators", "unterminated-string", "within"],
)
def test_what_a_parser_stops_at_first_is_left_to_the_parser(data):
    """A prefix that is no JSON (more closed than opened, strings with nothing
    between them, an unterminated string) ends the walk: the parser refuses it
    there with a 400 before building anything past it."""
    check_json_shape(data, max_values=300)
