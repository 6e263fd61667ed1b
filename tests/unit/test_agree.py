"""Op.agree: whether a shadow version's answer agrees with the primary's.

The default is deep equality with a float tolerance (serving.op.values_agree);
the OCR and ERNIE ops compare what their users read: the same texts, the same
labels, boxes within BOX_AGREE_PX. tests/integration/test_agree_models.py runs
the real models with and without batching, the comparison shadow traffic is for.
"""

from __future__ import annotations

import numpy as np
import pytest

from ops.ernie import ErnieClsOp
from ops.image import BOX_AGREE_PX
from ops.ocr_cls import OcrClsOp
from ops.ocr_det import OcrDetOp
from ops.ocr_rec import OcrRecOp
from serving.op import values_agree
from tests.support.config_fakes import FakeOp
from tests.support.ops import ERNIE_MODEL_DIR, make_op

BOX = [[10, 20], [110, 20], [110, 45], [10, 45]]


def moved(box, dx, dy=0.0):
    return [[x + dx, y + dy] for x, y in box]


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


# ---------------------------------------------------------------------------
# ops (no models: agree looks at merge outputs only)
# ---------------------------------------------------------------------------
def rec_lines(*texts, score=0.9):
    return [{"text": t, "score": score, "box": moved(BOX, 0, 40 * i)} for i, t in enumerate(texts)]


def test_rec_agrees_on_the_same_texts_in_order():
    op = make_op(OcrRecOp)
    primary = rec_lines("Invoice 42", "Total: 99.00")
    # other scores and boxes: still the same answer to a reader
    shadow = [dict(line, score=0.6, box=moved(line["box"], 7)) for line in primary]
    assert op.agree(primary, shadow)
    assert op.agree([], [])
    assert not op.agree(primary, rec_lines("Invoice 42", "Total: 90.00"))
    assert not op.agree(primary, rec_lines("Total: 99.00", "Invoice 42"))
    assert not op.agree(primary, rec_lines("Invoice 42"))  # a line dropped (e.g. under drop_score)
    assert not op.agree(primary, [])


def test_rec_source_op_agrees_on_the_text():
    op = make_op(OcrRecOp)
    assert op.agree({"text": "Hello", "score": 0.91}, {"text": "Hello", "score": 0.55})
    assert not op.agree({"text": "Hello", "score": 0.91}, {"text": "Hell0", "score": 0.91})
    # one crop's answer is not a list of lines, even with the same text
    assert not op.agree({"text": "Hello", "score": 0.9}, rec_lines("Hello"))


def test_ernie_agrees_on_the_label_of_a_text():
    op = make_op(ErnieClsOp, model_dir=ERNIE_MODEL_DIR)
    primary = {"label": "phone", "score": 0.97, "probs": {"phone": 0.97, "other": 0.03}}
    assert op.agree(primary, {"label": "phone", "score": 0.71, "probs": {"phone": 0.71, "other": 0.29}})
    assert not op.agree(primary, {"label": "other", "score": 0.51, "probs": {"phone": 0.49, "other": 0.51}})


def test_ernie_agrees_on_the_label_of_every_line():
    op = make_op(ErnieClsOp, model_dir=ERNIE_MODEL_DIR)

    def labelled(*labels, score=0.9):
        return [
            dict(line, label=label, label_score=None if label is None else score)
            for line, label in zip(rec_lines(*(f"line {i}" for i in range(len(labels)))), labels)
        ]

    primary = labelled("date", None, "money")  # None: a line with no text to classify
    assert op.agree(primary, labelled("date", None, "money", score=0.6))
    assert not op.agree(primary, labelled("date", None, "phone"))
    assert not op.agree(primary, labelled("date", "other", "money"))
    assert not op.agree(primary, labelled("date", None))
    assert op.agree([], [])
    assert not op.agree(primary[0] | {"probs": {}}, primary)  # a text's answer against lines


def det_output(*boxes):
    return {"image": np.zeros((100, 200, 3), np.uint8), "boxes": [list(b) for b in boxes], "box_type": "quad"}


def test_det_agrees_on_boxes_within_two_pixels():
    op = make_op(OcrDetOp)
    primary = det_output(BOX, moved(BOX, 0, 40))
    assert BOX_AGREE_PX == 2.0
    assert op.agree(primary, primary)
    assert op.agree(primary, det_output(moved(BOX, 2), moved(BOX, -1.5, 42)))
    assert op.agree(det_output(), det_output())
    assert not op.agree(primary, det_output(moved(BOX, 2.5), moved(BOX, 0, 40)))
    assert not op.agree(primary, det_output(BOX, moved(BOX, 0, 37)))
    assert not op.agree(primary, det_output(BOX))
    assert not op.agree(primary, det_output(moved(BOX, 0, 40), BOX))  # reading order matters
    # one corner off is enough
    corner = [list(p) for p in BOX]
    corner[2] = [corner[2][0] + 3, corner[2][1]]
    assert not op.agree(det_output(BOX), det_output(corner))


def test_det_agree_takes_numpy_boxes_and_polygons():
    op = make_op(OcrDetOp)
    assert op.agree(det_output(np.array(BOX, np.float32)), det_output(moved(BOX, 0.5)))
    poly = [[0, 0], [50, 0], [60, 10], [50, 20], [0, 20]]
    assert op.agree(det_output(poly), det_output(moved(poly, 1, 1)))
    assert not op.agree(det_output(poly), det_output(poly[:4]))
    assert not op.agree(det_output([[0, 0], [float("nan"), 0], [5, 5], [0, 5]]), det_output(BOX))
    assert not op.agree(det_output(BOX), det_output(BOX) | {"boxes": None})
    assert not op.agree(det_output(BOX), det_output(["not a box"]))


def test_cls_as_a_sink_agrees_on_boxes_and_angle_labels():
    op = make_op(OcrClsOp)

    def cls_output(angles, *boxes):
        out = det_output(*boxes)
        out["crops"] = [np.zeros((8, 16, 3), np.uint8) for _ in boxes]
        out["angles"] = angles
        return out

    primary = cls_output([["0", 0.99], ["180", 0.95]], BOX, moved(BOX, 0, 40))
    assert op.agree(primary, cls_output([["0", 0.7], ["180", 0.93]], moved(BOX, 1), moved(BOX, 0, 41)))
    assert not op.agree(primary, cls_output([["0", 0.99], ["0", 0.6]], BOX, moved(BOX, 0, 40)))
    assert not op.agree(primary, cls_output([["0", 0.99], ["180", 0.95]], BOX, moved(BOX, 0, 45)))


def test_ops_fall_back_to_deep_equality_for_other_shapes():
    """An output in no shape the op knows (e.g. a shadow pipeline whose sink is another op) is compared whole."""
    for op in (make_op(OcrRecOp), make_op(OcrDetOp), make_op(OcrClsOp), make_op(ErnieClsOp, model_dir=ERNIE_MODEL_DIR)):
        assert op.agree({"x": [1.0]}, {"x": [1.0]}), op.name
        assert not op.agree({"x": [1.0]}, {"x": [2.0]}), op.name
        assert not op.agree({"x": 1}, None), op.name
