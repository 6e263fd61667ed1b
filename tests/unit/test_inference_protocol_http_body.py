"""The Open Inference Protocol's HTTP form: the JSON header, the binary tensor
data after it, and the answer in either form."""

from __future__ import annotations

import json

import pytest

from serving.errors import BadRequest, PayloadTooLarge
from serving.http.v2_body import BinaryChoice, read_request, write_answer
from serving.service.open_inference.infer import InferAnswer, OutputTensor
from serving.service.open_inference.tensors import serialize_bytes


def body_of(doc, binary=b""):
    header = json.dumps(doc).encode()
    return header + binary, str(len(header)) if binary else None


def test_json_data_and_parameters():
    body, length = body_of(
        {
            "id": "7",
            "parameters": {"priority": 1, "binary_data_output": True},
            "inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["hi"]}],
            "outputs": [{"name": "score", "parameters": {"binary_data": False}}],
        }
    )
    request, choice = read_request(body, length, 4)
    assert request.id == "7" and request.parameters["priority"] == 1
    assert request.inputs[0].elements == ["hi"] and request.inputs[0].serialized is None
    assert [o.name for o in request.outputs] == ["score"]
    assert choice.binary("score") is False and choice.binary("result") is True


def test_binary_data_after_the_header():
    data = serialize_bytes([b"a", b"bc"])
    tensor = {"name": "text", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": len(data)}}
    request, choice = read_request(*body_of({"inputs": [tensor]}, data), 4)
    assert bytes(request.inputs[0].serialized) == data and not choice.binary("result")


@pytest.mark.parametrize(
    "doc, binary, length, fragment",
    [
        ({"inputs": []}, b"", "99", "from 0 to the body's"),
        ({"inputs": []}, b"", "-1", "from 0 to the body's"),
        ([], b"", None, "must be a JSON object"),
        ({}, b"", None, "'inputs' list"),
        ({"inputs": [{"name": "text", "datatype": "BYTES", "shape": ["1"]}]}, b"", None, "list of integers"),
        ({"inputs": [{"name": "t", "datatype": "BYTES", "shape": [1], "data": "x"}]}, b"", None, "must be a list"),
        ({"id": 3, "inputs": []}, b"", None, "string 'id'"),
        ({"inputs": [], "parameters": {"binary_data_output": 1}}, b"", None, "true or false"),
        (
            {"inputs": [{"name": "t", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 5}}]},
            b"ab",
            "x",
            "within the 2 bytes",
        ),
        (
            {"inputs": [{"name": "t", "datatype": "BYTES", "shape": [1], "parameters": {"shared_memory_region": "r"}}]},
            b"",
            None,
            "shared memory",
        ),
        ({"inputs": [{"name": "t", "datatype": "BYTES", "shape": [1], "data": []}]}, b"xy", "x", "2 bytes after"),
    ],
)
def test_malformed_requests_are_400(doc, binary, length, fragment):
    header = json.dumps(doc).encode()
    if length == "x":
        length = str(len(header))
    with pytest.raises(BadRequest, match=fragment):
        read_request(header + binary, length, 4)


def test_the_json_header_is_bounded_before_it_is_parsed():
    data = ",".join(['"a"'] * 10_000)
    body = ('{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [' + data + "]}]}").encode()
    with pytest.raises(PayloadTooLarge):
        read_request(body, None, 4)


def test_answers_in_json_and_binary_form():
    outputs = [OutputTensor("result", "BYTES", ['{"a":1}']), OutputTensor("score", "FP32", [0.5])]
    answer = InferAnswer("m", "2", "", outputs)
    body, length = write_answer(answer, BinaryChoice())
    assert length is None and json.loads(body) == {
        "model_name": "m",
        "model_version": "2",
        "outputs": [
            {"name": "result", "datatype": "BYTES", "shape": [1], "data": ['{"a":1}']},
            {"name": "score", "datatype": "FP32", "shape": [1], "data": [0.5]},
        ],
    }
    body, length = write_answer(InferAnswer("m", "2", "id-1", outputs), BinaryChoice(by_name={"score": True}))
    head = json.loads(body[:length])
    assert head["id"] == "id-1" and head["outputs"][1]["parameters"] == {"binary_data_size": 4}
    assert body[length:] == b"\x00\x00\x00?"
