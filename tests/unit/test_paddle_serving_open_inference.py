"""A KServe v2 request as a Paddle Serving script's ``Request`` (serving/paddle_serving/open_inference.py),
and the script's answer as the protocol's: what each input tensor becomes, and every refusal before a
script sees anything."""

import numpy as np
import pytest

from serving.errors import BadRequest, InternalError, PayloadTooLarge
from serving.paddle_serving.open_inference import script_answer, script_request
from serving.protos import pipeline_messages
from serving.service.open_inference.request import InferRequest, InputTensor, RequestedOutput

pytestmark = pytest.mark.unit


def request(*tensors: InputTensor) -> InferRequest:
    return InferRequest(inputs=list(tensors))


def test_a_bytes_element_is_a_key_and_a_numeric_tensor_a_tensor():
    message = script_request(
        request(
            InputTensor("text", "BYTES", [1], elements=["你好"]),
            InputTensor("raw", "BYTES", [1, 1], serialized=b"\x02\x00\x00\x00hi"),
            InputTensor("x", "FP32", [2, 2], elements=[[1.5, 2], [3, 4]]),
            InputTensor("ids", "INT64", [3], serialized=np.array([1, -2, 3], "<i8").tobytes()),
            InputTensor("flag", "BOOL", [], elements=[True]),
        ),
        max_values=100,
    )
    assert dict(zip(message.key, message.value)) == {"text": "你好", "raw": "hi"}
    x, ids, flag = message.tensors
    assert (x.name, x.elem_type, list(x.shape), list(x.float_data)) == ("x", 1, [2, 2], [1.5, 2, 3, 4])
    assert (ids.elem_type, list(ids.int64_data)) == (0, [1, -2, 3])
    assert (flag.elem_type, list(flag.shape), list(flag.bool_data)) == (9, [], [True])


@pytest.mark.parametrize(
    ("tensors", "error", "why"),
    [
        ([InputTensor("a", "BYTES", [1], elements=["x"])] * 2, BadRequest, "given twice"),
        ([InputTensor("a", "BYTES", [2], elements=["x", "y"])], BadRequest, "one value"),
        ([InputTensor("a", "BYTES", [1], serialized=b"\x01\x00\x00\x00\xff")], BadRequest, "UTF-8"),
        ([InputTensor("a", "BYTES", [1], elements=[7])], BadRequest, "must be a string"),
        ([InputTensor("a", "FP32", [-1], elements=[])], BadRequest, "none negative"),
        ([InputTensor("a", "FP32", [10**12], serialized=b"")], PayloadTooLarge, "values"),
        ([InputTensor("a", "FP32", [3], serialized=b"\x00" * 8)], BadRequest, "bytes of binary data"),
        ([InputTensor("a", "FP32", [2], elements=[1.0])], BadRequest, "1 elements"),
        ([InputTensor("a", "FP32", [1], elements=["one"])], BadRequest, "not FP32"),
        ([InputTensor("a", "UINT64", [1], elements=[1])], BadRequest, "a script takes"),
        ([InputTensor("a", "FP32", [1])], BadRequest, "no data"),
        ([InputTensor("a", "FP32", [1], elements=[1.0], serialized=b"\x00" * 4)], BadRequest, "given twice"),
    ],
)
def test_what_no_script_could_be_sent_is_refused(tensors, error, why):
    with pytest.raises(error, match=why):
        script_request(request(*tensors), max_values=100)


def test_the_elements_of_all_inputs_count_against_the_requests_values():
    tensors = [InputTensor(f"x{i}", "INT32", [40], elements=[0] * 40) for i in range(3)]
    assert len(script_request(request(*tensors[:2]), max_values=100).tensors) == 2
    with pytest.raises(PayloadTooLarge):
        script_request(request(*tensors), max_values=100)


def test_each_answer_key_is_a_bytes_output_and_a_failure_keeps_paddle_servings_code():
    m = pipeline_messages()
    resp = m.Response(err_no=0, key=["text", "pid"], value=["HI", "7"])
    answer = script_answer(resp, 200, ("echo", "1", "id-1"), [])
    assert [(o.name, o.datatype, o.values) for o in answer.outputs] == [
        ("text", "BYTES", ["HI"]),
        ("pid", "BYTES", ["7"]),
    ]
    assert [o.name for o in script_answer(resp, 200, ("echo", "1", ""), [RequestedOutput("pid")]).outputs] == ["pid"]
    with pytest.raises(BadRequest, match="no output 'nope'"):
        script_answer(resp, 200, ("echo", "1", ""), [RequestedOutput("nope")])
    with pytest.raises(BadRequest, match="err_no 61: refused"):
        script_answer(m.Response(err_no=61, err_msg="refused"), 400, ("echo", "1", ""), [])
    with pytest.raises(InternalError, match="err_no 7000"):
        script_answer(m.Response(err_no=7000, err_msg="type"), 500, ("echo", "1", ""), [])
