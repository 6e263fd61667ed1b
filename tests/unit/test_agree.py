"""Op.agree: whether a shadow version's answer agrees with the primary's.

The default is deep equality with a float tolerance (serving.op.values_agree).
"""

from __future__ import annotations

import numpy as np
import pytest

from serving.op import values_agree
from tests.support.config_fakes import FakeOp
from tests.support.ops import make_op


# ---------------------------------------------------------------------------
# default: deep equality
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a, b",
    [
        (1, 1),
        (1, 1.0),
        (0.1 + 0.2, 0.3),
        (1.0, 1.0 + 5e-7),
        (float("nan"), float("nan")),
        (np.float32(0.5), 0.5),
        (np.int64(3), 3),
        (True, np.bool_(True)),
        ("text", "text"),
        (None, None),
        ([1, (2, 3)], ((1, [2, 3]))),  # lists and tuples alike (JSON has one kind)
        ({"a": [1.0, {"b": "x"}]}, {"a": [1.0 + 1e-9, {"b": "x"}]}),
        (np.array([[1.0, 2.0]], np.float32), np.array([[1.0, 2.0 + 1e-7]], np.float64)),
        (np.array([1.0, np.nan]), [1.0, float("nan")]),
        (np.array(["a", "b"]), ["a", "b"]),
        (np.array([True, False]), np.array([True, False])),
        ({"image": np.zeros((2, 2, 3), np.uint8), "boxes": []}, {"image": np.zeros((2, 2, 3), np.uint8), "boxes": []}),
    ],
)
def test_values_agree(a, b):
    assert values_agree(a, b) and values_agree(b, a)


@pytest.mark.parametrize(
    "a, b",
    [
        (1, 2),
        (1.0, 1.001),
        (0.0, 2e-6),  # beyond the absolute tolerance
        (1.0, float("nan")),
        (True, 1),  # a flag is not a number
        ("text", "test"),
        (None, 0),
        (None, []),
        ([1, 2], [1, 2, 3]),
        ([1], {"0": 1}),
        ({"a": 1}, {"a": 1, "b": 2}),
        ({"a": 1}, {"b": 1}),
        ("ab", ["a", "b"]),
        (np.zeros((2, 3)), np.zeros((3, 2))),
        (np.array([1.0, 2.0]), np.array([1.0, 2.1])),
        (np.array([1, 2]), 1),
        (np.array([1, 2]), [[1, 2], [3]]),  # ragged: no array
        (np.array(["a", "b"]), ["a", "c"]),
    ],
)
def test_values_disagree(a, b):
    assert not values_agree(a, b) and not values_agree(b, a)


def test_values_agree_tolerance_is_adjustable():
    assert values_agree(1.0, 1.01, rel_tol=0.02) and not values_agree(1.0, 1.01)
    assert values_agree(np.array([1.0]), np.array([1.01]), rel_tol=0.02)


def test_an_eq_without_a_truth_value_disagrees():
    class Odd:
        def __eq__(self, other):
            return np.array([True, False])

        __hash__ = object.__hash__

    assert not values_agree(Odd(), Odd())


def test_default_op_agree_is_deep_equality():
    op = make_op(FakeOp)
    assert op.agree({"value": [1.0, 2.0]}, {"value": (1.0, 2.0 + 1e-9)})
    assert not op.agree({"value": [1.0, 2.0]}, {"value": [1.0, 2.5]})
