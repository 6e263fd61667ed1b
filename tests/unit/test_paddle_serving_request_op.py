"""Paddle Serving's default ``RequestOp.unpack_request_package`` (serving/paddle_serving/operator.py)
on tensors, as the real one unpacks them (the recorded answers of the tensor_inputs case hold it
to Paddle Serving 0.9 end to end; this is the fast check of the same rules)."""

import io

import numpy as np
import pytest
from numpy.lib.format import write_array_header_1_0

from serving.paddle_serving.operator import NPY_ONLY, RequestOp
from serving.protos import pipeline_messages

pytestmark = pytest.mark.unit

M = pipeline_messages()


def unpack(*tensors, **fields):
    request = M.Request(**fields)
    for tensor in tensors:
        request.tensors.add(**tensor)
    data, log_id, code, info = RequestOp().unpack_request_package(request)
    assert (code, info) == (None, "")
    return data, log_id


def test_each_elem_type_becomes_its_dtype_and_shape():
    data, _ = unpack(
        {"name": "f", "elem_type": 1, "shape": [2, 1], "float_data": [0.5, 2]},
        {"name": "i", "elem_type": 4, "shape": [2], "int_data": [40000, -3]},
        {"name": "u", "elem_type": 7, "shape": [2], "uint32_data": [255, 256]},
        {"name": "b", "elem_type": 9, "shape": [1], "bool_data": [True]},
        {"name": "s", "elem_type": 12, "str_data": ["ab", "cd"]},
        key=["k"],
        value=["v"],
    )
    assert data["k"] == "v" and data["s"] == "abcd"
    assert data["f"].dtype == np.float32 and data["f"].shape == (2, 1)
    assert data["i"].tolist() == [-25536, -3]  # astype wraps, as numpy does there
    assert data["u"].dtype == np.uint8 and data["u"].tolist() == [255, 0]
    assert data["b"].tolist() == [True]


def test_an_empty_shape_is_a_0d_array_and_lod_comes_as_its_own_key():
    data, _ = unpack(
        {"name": "x", "elem_type": 2, "int_data": [5]},
        {"name": "y", "elem_type": 1, "shape": [2, 1], "float_data": [1, 2], "lod": [0, 1, 0, 2]},
    )
    assert data["x"].shape == () and data["x"] == 5
    assert data["y.lod"].dtype == np.int32 and data["y.lod"].tolist() == [[0, 1], [0, 2]]


def test_npy_bytes_are_loaded_without_unpickling():
    buffer = io.BytesIO()
    np.save(buffer, np.arange(4, dtype="int16").reshape(2, 2))
    data, _ = unpack({"name": "x", "elem_type": 13, "byte_data": buffer.getvalue()})
    assert data["x"].dtype == np.int16 and data["x"].tolist() == [[0, 1], [2, 3]]
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    huge = io.BytesIO()
    write_array_header_1_0(huge, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    for raw in (buffer.getvalue(), b"not npy", b"", huge.getvalue() + bytes(64)):
        with pytest.raises(ValueError, match=NPY_ONLY):
            unpack({"name": "x", "elem_type": 13, "byte_data": raw})


@pytest.mark.parametrize(
    "tensor, why",
    [
        ({"elem_type": 1, "shape": [3], "float_data": [1, 2]}, "cannot reshape array of size 2 into shape"),
        ({"elem_type": 10, "shape": [1], "float_data": [1]}, "Sorry, the type 10 of tensor x is not supported."),
        ({"elem_type": 99, "shape": [1]}, "elem_type:99 error"),
    ],
)
def test_a_tensor_that_cannot_be_read_raises_paddle_servings_error(tensor, why):
    with pytest.raises(ValueError) as caught:
        unpack({"name": "x", **tensor})
    assert why in str(caught.value)
