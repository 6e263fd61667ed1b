"""The count of what parsing a message builds, on its bytes (serving/grpc/wire_count.py):
the same count protobuf's own parser builds for any valid message of both protocols,
never less for hostile bytes the parser takes, refusals naming the bound, and no
more work than the limit allows whatever the bytes."""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from hypothesis import given, settings
from hypothesis import strategies as st

from serving.errors import PayloadTooLarge
from serving.grpc import wire_count
from serving.grpc.wire_count import WireCount, WireError
from serving.protos import inference_messages, pipeline_messages
from serving.service.json_budget import value_budget

IM, PM = inference_messages(), pipeline_messages()
INFER = WireCount(IM.ModelInferRequest.DESCRIPTOR)
PADDLE = WireCount(PM.Request.DESCRIPTOR)
BIG = 1 << 40


def built(message) -> int:
    """What the parser built of ``message``: sub-messages (a map entry and its value message
    each), repeated elements and unknown fields, all the way down."""
    n = len(UnknownFieldSet(message))
    for fd, value in message.ListFields():
        repeated = fd.is_repeated
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            values = fd.message_type.fields_by_name["value"]
            for key in value:
                n += 1
                if values.message_type is not None:
                    n += 1 + built(value[key])
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            for sub in value if repeated else [value]:
                n += 1 + built(sub)
        elif repeated:
            n += len(value)
    return n


# ------------------------------------------------------------------------------ valid messages

small_ints = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=6)


@st.composite
def infer_parameter(draw):
    param = IM.InferParameter()
    which = draw(st.sampled_from(["none", "bool", "int64", "string", "double", "uint64"]))
    if which == "bool":
        param.bool_param = draw(st.booleans())
    elif which == "int64":
        param.int64_param = draw(small_ints)
    elif which == "string":
        param.string_param = draw(names)
    elif which == "double":
        param.double_param = draw(st.floats(allow_nan=False))
    elif which == "uint64":
        param.uint64_param = draw(st.integers(0, 2**64 - 1))
    return param


def fill_parameters(target, draw) -> None:
    for key in draw(st.lists(names, max_size=3, unique=True)):
        target[key].CopyFrom(draw(infer_parameter()))


@st.composite
def infer_requests(draw):
    req = IM.ModelInferRequest(model_name=draw(names), model_version=draw(names), id=draw(names))
    fill_parameters(req.parameters, draw)
    for _ in range(draw(st.integers(0, 3))):
        tensor = req.inputs.add(name=draw(names), datatype=draw(names), shape=draw(st.lists(small_ints, max_size=4)))
        fill_parameters(tensor.parameters, draw)
        if draw(st.booleans()):
            c = tensor.contents
            c.SetInParent()  # an empty contents message is one too
            c.bool_contents.extend(draw(st.lists(st.booleans(), max_size=5)))
            c.int_contents.extend(draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)))
            c.int64_contents.extend(draw(st.lists(small_ints, max_size=5)))
            c.uint_contents.extend(draw(st.lists(st.integers(0, 2**32 - 1), max_size=5)))
            c.uint64_contents.extend(draw(st.lists(st.integers(0, 2**64 - 1), max_size=5)))
            c.fp32_contents.extend(draw(st.lists(st.floats(width=32, allow_nan=False), max_size=5)))
            c.fp64_contents.extend(draw(st.lists(st.floats(allow_nan=False), max_size=5)))
            c.bytes_contents.extend(draw(st.lists(st.binary(max_size=5), max_size=5)))
    for _ in range(draw(st.integers(0, 3))):
        fill_parameters(req.outputs.add(name=draw(names)).parameters, draw)
    req.raw_input_contents.extend(draw(st.lists(st.binary(max_size=8), max_size=3)))
    return req


@st.composite
def paddle_requests(draw):
    req = PM.Request(name=draw(names), method=draw(names), logid=draw(small_ints), clientip=draw(names))
    req.key.extend(draw(st.lists(names, max_size=4)))
    req.value.extend(draw(st.lists(names, max_size=4)))
    for _ in range(draw(st.integers(0, 3))):
        t = req.tensors.add(name=draw(names), byte_data=draw(st.binary(max_size=6)), elem_type=draw(st.integers(0, 20)))
        t.int64_data.extend(draw(st.lists(small_ints, max_size=4)))
        t.float_data.extend(draw(st.lists(st.floats(width=32, allow_nan=False), max_size=4)))
        t.int_data.extend(draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4)))
        t.float64_data.extend(draw(st.lists(st.floats(allow_nan=False), max_size=4)))
        t.uint32_data.extend(draw(st.lists(st.integers(0, 2**32 - 1), max_size=4)))
        t.bool_data.extend(draw(st.lists(st.booleans(), max_size=4)))
        t.str_data.extend(draw(st.lists(names, max_size=4)))
        t.shape.extend(draw(st.lists(st.integers(-5, 2**31 - 1), max_size=4)))
        t.lod.extend(draw(st.lists(st.integers(0, 100), max_size=4)))
    return req


@settings(max_examples=300, deadline=None)
@given(st.one_of(infer_requests(), paddle_requests()))
def test_the_count_of_a_valid_message_is_what_the_parser_builds(message):
    data = message.SerializeToString()
    counter = INFER if message.DESCRIPTOR.full_name == "inference.ModelInferRequest" else PADDLE
    count = built(type(message).FromString(data))
    assert counter.check(data, BIG) == count
    if count:
        with pytest.raises(PayloadTooLarge):
            counter.check(data, count - 1)


def test_a_usual_request_is_far_within_the_limit():
    req = IM.ModelInferRequest(model_name="ocr", id="r-1")
    req.inputs.add(name="image", datatype="BYTES", shape=[64]).contents.bytes_contents.extend([b"x" * 1000] * 64)
    req.outputs.add(name="result")
    req.parameters["priority"].int64_param = 1
    assert INFER.check(req.SerializeToString(), value_budget(64)) == 1 + 1 + 64 + 1 + 1 + 2
    paddle = PM.Request(key=["image"] * 64, value=["x" * 1000] * 64, logid=3)
    assert PADDLE.check(paddle.SerializeToString(), value_budget(64)) == 128


# ------------------------------------------------------------------------------ hostile messages


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


@pytest.mark.parametrize(
    "data, what",
    [
        (b"\x2a\x00" * 10_000, "empty inputs"),
        (field(5, field(5, b"")) * 5_000, "inputs, each with an empty contents message"),
        (field(4, b"") * 10_000, "empty parameter map entries"),
        (field(7, b"") * 10_000, "empty raw contents"),
        (field(5, field(3, b"\x00" * 10_000)), "a packed shape of 10,000 zeros"),
        (field(5, field(5, field(6, b"\x00" * 40_000))), "10,000 packed floats"),
        (field(5, field(5, field(1, b"\x01" * 10_000_000))), "10 M packed bools (not counted byte by byte)"),
        (b"\x1a\x00" * 10_000, "unknown fields (a Paddle field number, here)"),
        (b"\x0a\x00" * 10_000, "model_name sent 10,000 times"),
        (b"\x08\x00" * 10_000, "model_name sent as a varint: an unknown field"),
        (b"\xf8\x07\x01" * 10_000, "an unknown varint field"),
    ],
    ids=lambda case: case if isinstance(case, str) else "",
)
def test_hostile_messages_are_refused_before_parsing(data, what):
    with pytest.raises(PayloadTooLarge, match="over 512 values"):
        INFER.check(data, 512)


def test_paddle_keys_values_and_tensors_count_as_the_parser_builds_them():
    with pytest.raises(PayloadTooLarge):
        PADDLE.check(b"\x0a\x04text\x12\x01a" * 400, value_budget(64))
    tensor = PM.Tensor(name="text", str_data=["a"]).SerializeToString()
    with pytest.raises(PayloadTooLarge):
        PADDLE.check(field(3, tensor) * 300, value_budget(64))  # 2 each


@pytest.mark.parametrize(
    "data, why",
    [
        (b"\xff\xff\xff", "truncated varint"),
        (b"\x0a\x05ab", "truncated field"),
        (b"\x2a\x80", "truncated varint"),
        (b"\x0e", "wire type 6"),
        (b"\x00\x01", "field number 0"),
        (b"\x80" * 11 + b"\x01", "longer than 10 bytes"),
        (field(5, field(5, field(6, b"\x00" * 7))), "not a multiple of 4"),
        (field(5, field(3, b"\x01\x80")), "truncated varint in a packed run"),
    ],
    ids=lambda case: case if isinstance(case, str) else "",
)
def test_malformed_bytes_are_refused_as_the_parser_refuses_them(data, why):
    with pytest.raises(WireError, match=why):
        INFER.check(data, BIG)
    with pytest.raises(DecodeError):
        IM.ModelInferRequest.FromString(data)


def test_groups_are_refused_though_the_parser_would_keep_them_as_unknown_fields():
    """No message of these protocols has a group: one is never a client's, and nested groups
    would be a depth the walk does not descend."""
    with pytest.raises(WireError, match="group"):
        INFER.check(b"\x0b\x0c", BIG)
    IM.ModelInferRequest.FromString(b"\x0b\x0c")


# the most fields any one message type of both protocols has (Paddle's Tensor: 14)
MOST_FIELDS = 14


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=8),
            st.sampled_from([b"\x2a\x00", b"\x0a\x00", b"\x12\x01a", b"\x1a\x00", b"\x08\x01", b"\x22\x00", b"\x2a"]),
            infer_requests().map(lambda m: m.SerializeToString()),
        ),
        max_size=60,
    ),
    st.integers(0, 40),
)
def test_hostile_bytes_cost_no_more_steps_than_the_limit_allows_and_are_never_undercounted(pieces, limit):
    data = b"".join(pieces)
    steps = []
    read = wire_count._varint

    def counting(*args):
        steps.append(1)
        return read(*args)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(wire_count, "_varint", counting)
        try:
            count = INFER.check(data, limit)
        except (PayloadTooLarge, WireError):
            count = None
    # a tag and a length or value per field; fields: the counted ones and each message's first ones
    assert len(steps) <= 2 * ((limit + 1) + MOST_FIELDS * (limit + 2))
    if count is not None:
        try:
            parsed = IM.ModelInferRequest.FromString(data)
        except DecodeError:
            return
        assert built(parsed) <= count


def test_a_numeric_tensor_counts_its_elements_before_it_is_parsed():
    request = WireCount(PM.Request.DESCRIPTOR)
    tensor = PM.Tensor(name="x", float_data=[0.5] * 1_000_000).SerializeToString()
    with pytest.raises(PayloadTooLarge):  # a user's script reads numeric tensors: they count as JSON numbers do
        request.check(field(3, tensor), 512)
    assert request.check(field(3, PM.Tensor(name="x", int_data=[1, 2]).SerializeToString()), 512) == 3
    assert request.check(field(3, field(2, b"")), 512) == 1  # an empty packed run holds nothing
