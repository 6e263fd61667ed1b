"""The Open Inference Protocol's request core: tensors -> ParsedRequest, counts
checked before elements, parameters, requested outputs, the binary BYTES form."""

from __future__ import annotations

import pytest

from serving.errors import BadRequest, PayloadTooLarge
from serving.service.open_inference.model import BYTES, FP32, RESULT, TensorSpec
from serving.service.open_inference.request import (
    InferRequest,
    InputTensor,
    RequestedOutput,
    chosen_outputs,
    parse_request,
    priority_level,
    timeout_ms,
)
from serving.service.open_inference.tensors import deserialize_bytes, serialize_bytes, serialize_fp32

OFFERED = (TensorSpec(RESULT, BYTES), TensorSpec("label", BYTES), TensorSpec("score", FP32))


def parse(*inputs, kind="text", max_inputs=4, levels=2, **request):
    return parse_request(
        InferRequest(list(inputs), **request), kind=kind, max_inputs=max_inputs, priority_levels=levels
    )


def test_json_strings_and_binary_elements_become_inputs():
    assert parse(InputTensor("text", BYTES, [2], elements=["a", "b"])).inputs == [
        ("text", "a", False),
        ("text", "b", False),
    ]
    serialized = serialize_bytes([b"\x89PNG", b""])
    parsed = parse(InputTensor("img", BYTES, [2, 1], serialized=serialized), kind="image")  # an alias
    assert parsed.inputs == [("image", b"\x89PNG", True), ("image", b"", True)]


def test_n_by_1_data_may_be_nested_as_its_shape():
    assert len(parse(InputTensor("text", BYTES, [2, 1], elements=[["a"], ["b"]])).inputs) == 2


@pytest.mark.parametrize(
    "tensor, fragment",
    [
        (InputTensor("text", "FP32", [1], elements=[1.0]), "datatype 'FP32'"),
        (InputTensor("image", BYTES, [1], elements=["a"]), "input is 'text'"),
        (InputTensor("text", BYTES, [2, 2], elements=["a"] * 4), "is not [N] or [N, 1]"),
        (InputTensor("text", BYTES, [-1], elements=[]), "is not [N] or [N, 1]"),
        (InputTensor("text", BYTES, [3], elements=["a", "b"]), "2 elements for shape [3]"),
        (InputTensor("text", BYTES, [1], elements=[7]), "must be a string"),
        (InputTensor("text", BYTES, [1]), "no data"),
        (InputTensor("text", BYTES, [0], elements=[]), "no inputs"),
        (InputTensor("text", BYTES, [1], elements=["a"], serialized=b""), "given twice"),
    ],
)
def test_malformed_tensors_are_400(tensor, fragment):
    with pytest.raises(BadRequest, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        parse(tensor)


def test_one_input_tensor_only():
    with pytest.raises(BadRequest, match="one input tensor"):
        parse(InputTensor("text", BYTES, [1], elements=["a"]), InputTensor("text", BYTES, [1], elements=["b"]))


def test_rows_over_the_limit_are_413_before_any_element_is_read():
    class Unreadable(list):
        def __len__(self):
            raise AssertionError("an element was read")

    with pytest.raises(PayloadTooLarge, match="limit 4"):
        parse(InputTensor("text", BYTES, [10**9], elements=Unreadable()))


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"\x05\x00\x00", "ends at element 0"),
        (b"\x05\x00\x00\x00abc", "claims 5 bytes, 3 are left"),
        (b"\x01\x00\x00\x00ab", "1 bytes of binary data left"),
    ],
)
def test_binary_bytes_must_hold_exactly_the_shapes_elements(data, fragment):
    with pytest.raises(BadRequest, match=fragment):
        deserialize_bytes(data, 1, "input 'text'")


def test_binary_forms_round_trip():
    assert deserialize_bytes(memoryview(serialize_bytes([b"ab", "好".encode()])), 2, "x") == [b"ab", "好".encode()]
    assert serialize_fp32([0.5, 1.0]) == b"\x00\x00\x00?\x00\x00\x80?"


@pytest.mark.parametrize("p, level", [(None, 0), (0, 0), (1, 2), (2, 1), (3, 0), (99, 0)])
def test_triton_priority_1_is_the_highest_level(p, level):
    assert priority_level({} if p is None else {"priority": p}, 3) == level


@pytest.mark.parametrize("us, ms", [(None, None), (0, None), (1, 1), (1000, 1), (1001, 2), (2_500_000, 2500)])
def test_timeout_microseconds_round_up_to_milliseconds(us, ms):
    assert timeout_ms({} if us is None else {"timeout": us}) == ms


@pytest.mark.parametrize("value", [-1, True, "5", 1.5])
def test_parameters_must_be_non_negative_integers(value):
    with pytest.raises(BadRequest, match="'timeout' must be an integer >= 0"):
        timeout_ms({"timeout": value})


def test_parameters_reach_the_parsed_request_and_others_are_ignored():
    tensor = InputTensor("text", BYTES, [1], elements=["a"])
    parsed = parse(tensor, parameters={"priority": 1, "timeout": 1500, "sequence_id": 3})
    assert (parsed.priority, parsed.timeout_ms) == (1, 2)


def test_requested_outputs_in_their_order_and_all_by_default():
    assert chosen_outputs([], OFFERED) == list(OFFERED)
    chosen = chosen_outputs([RequestedOutput("score"), RequestedOutput("result")], OFFERED)
    assert [s.name for s in chosen] == ["score", "result"]


@pytest.mark.parametrize(
    "requested, fragment",
    [
        ([RequestedOutput("probs")], "offers result, label, score"),
        ([RequestedOutput("label"), RequestedOutput("label")], "requested twice"),
        ([RequestedOutput("label", {"classification": 2})], "classification extension"),
    ],
)
def test_requested_outputs_not_offered_are_400(requested, fragment):
    with pytest.raises(BadRequest, match=fragment):
        chosen_outputs(requested, OFFERED)
