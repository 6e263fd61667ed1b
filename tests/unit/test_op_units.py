"""The shipped ops' item sizes (``Op.pad_extent``) agree with their ``collate``:
every sub-batch is padded to exactly the largest extent of its items, in the
units it reports as ``padded_units``, so the batcher's count of a batch
(items x largest extent) bounds what its predictor calls really hold."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ops.ernie import Encoded, ErnieClsOp
from ops.ocr_cls import ClsItem, OcrClsOp
from ops.ocr_det import DetItem, DetParams, OcrDetOp
from ops.ocr_rec import OcrRecOp, RecItem, RecParams
from serving.batching.units import batch_units
from serving.config.op_classes import BUILTIN_OPS, resolve_op_class
from serving.op import Op
from tests.support.ops import ERNIE_MODEL_DIR as MODEL_DIR
from tests.support.ops import make_op


def assert_agrees(op: Op, items: list) -> None:
    extents = [op.pad_extent(it) for it in items]
    subs = op.collate(items)
    for sub in subs:
        group = [extents[i] for i in sub.indices]
        largest = [max(dim) for dim in zip(*group)]
        assert sub.padded_units == len(sub.indices) * math.prod(largest), (op.name, sub.indices, group)
    assert sum(s.padded_units for s in subs) <= batch_units(extents)


def det_item(h: int, w: int) -> DetItem:
    return DetItem(np.zeros((3, h, w), np.float32), np.array([h, w, 1.0, 1.0]), (h, w))


@pytest.mark.parametrize(
    "params",
    [DetParams(), DetParams(max_padding_ratio=1.0), DetParams(size_buckets=[320, 640], bucket_step=160)],
)
def test_det_pages_in_pixels(params):
    op = make_op(OcrDetOp, params)
    items = [det_item(h, w) for h, w in ((96, 352), (320, 64), (96, 352), (640, 960), (32, 32))]
    assert op.pad_extent(items[0]) == (op.bucket_side(96), op.bucket_side(352))
    assert_agrees(op, items)


@pytest.mark.parametrize("policy", ["bucket", "paddleocr"])
def test_rec_crops_in_pixels(policy):
    op = make_op(OcrRecOp, RecParams(pad_policy=policy))
    widths = (330, 100, 640, 399, 500, 2500)
    pads = (960, 960, 960, 960, 960, 2500) if policy == "paddleocr" else (None,) * len(widths)
    items = [RecItem(np.zeros((3, 48, w), np.float32), pad) for w, pad in zip(widths, pads)]
    assert op.pad_extent(items[1]) == (48, 960 if policy == "paddleocr" else 320)
    assert_agrees(op, items)


def test_ernie_texts_in_tokens():
    op = make_op(ErnieClsOp, ErnieClsOp.Params(), model_dir=MODEL_DIR, load=True)
    items = [Encoded(tuple(range(n))) for n in (5, 16, 17, 40, 128, 3)]
    assert [op.pad_extent(it) for it in items[:3]] == [(16,), (16,), (32,)]
    assert_agrees(op, items)


def test_cls_crops_pad_to_the_model_width():
    op = make_op(OcrClsOp)
    items = [ClsItem(np.zeros((48, w, 3), np.uint8), np.zeros((3, 48, w), np.float32)) for w in (50, 192, 120)]
    assert {op.pad_extent(it) for it in items} == {(48, 192)}
    assert_agrees(op, items)


@pytest.mark.parametrize("name", sorted(BUILTIN_OPS))
def test_every_shipped_op_gives_item_sizes(name):
    cls = resolve_op_class(name)
    assert cls.pad_unit in ("pixels", "tokens")
    assert cls.pad_extent is not Op.pad_extent
