"""Our OCR ops vs PaddleOCR 2.10 run in-process, on synthetic pages.

Two modes are checked (see ops/ocr_rec.py ``pad_policy``):

* **default configs (det no size buckets, rec ``pad_policy: paddleocr``)**: the
  same padding as PaddleOCR, so >= 98% of its lines must come out identical
  (text equal, box within 3 px) -- batched and one item at a time.
* **rec ``pad_policy: bucket``** (width buckets, more batching across requests):
  the PP-OCRv4 rec model reads word spaces differently depending on how far a crop
  is right-padded, and PaddleOCR pads each crop to the widest of its group of 6.
  Tighter buckets read *more* spaces than PaddleOCR does, which is closer to
  the ground truth. So here >= 98% of lines must match with spaces ignored,
  and exact-text accuracy against the rendered ground truth must be at least
  PaddleOCR's.

``compare_with_reference`` is reusable (the server e2e test compares the
served pipeline's answers with the same function).

PaddleOCR's answers are the committed ones (tests/data/ocr/, made by
``python -m tests.support.make_ocr_data``); :func:`test_committed_answers_are_what_paddleocr_gives`
runs the installed PaddleOCR on a few of those pages, so the committed answers
cannot drift from it unnoticed.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

import pytest

from tests.support import ocr_data
from tests.support.ocr_reference import (
    MIN_MATCH,
    _line,
    box_distance,
    compare_with_reference,
    make_reference,
    run_reference,
)

pytestmark = [
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("paddle", "paddleocr", "rapidocr_paddle")),
        reason="needs paddle, paddleocr and rapidocr_paddle",
    ),
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def config():
    from serving.config import load_config

    return load_config(os.path.join(ROOT, "configs", "ocr_cls.yml"))


def build_ops(config, names: Sequence[str], **overrides: dict) -> list[tuple[Any, Any]]:
    """(op, runner) pairs for ``names`` from ``config``; ``overrides[name]`` updates its params."""
    from tests.support.ops import runner_for

    chain = [(op, runner_for(op)) for op, _ in _ops_only(config, names, **overrides)]
    return chain


@pytest.fixture(scope="module")
def runners(config):
    """One predictor per model, shared by every op variant below."""
    chain = build_ops(config, ["det", "cls", "rec"])
    return {op.name: runner for op, runner in chain}


def variant(config, runners, names, **overrides):
    return [(op, runners[op.name]) for op, _ in _ops_only(config, names, **overrides)]


def _ops_only(config, names, **overrides):
    from serving.op import OpContext

    out = []
    for name in names:
        oc = config.op[name]
        op = oc.op_class(OpContext(name, conf=oc, params=oc.params_model.model_copy(update=overrides.get(name, {}))))
        op.load()
        out.append((op, None))
    return out


BUCKETS = {"rec": {"pad_policy": "bucket"}}


def run_all(chain, docs, max_batch_size=None):
    from serving.batching.direct import run_chain_direct

    return [run_chain_direct(chain, d.image, max_batch_size=max_batch_size) for d in docs]


def summary(reference, ours, **kw):
    total = matched = 0
    bad = []
    for ref, got in zip(reference, ours):
        rate, mism = compare_with_reference(ref, got, **kw)
        total += len(ref)
        matched += round(rate * len(ref))
        bad += mism
    return matched / max(1, total), bad, total


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
def test_compare_with_reference_function():
    a = {"text": "hello world", "score": 0.9, "box": [[0, 0], [10, 0], [10, 5], [0, 5]]}
    moved = dict(a, box=[[4, 0], [14, 0], [14, 5], [4, 5]])
    assert compare_with_reference([a], [a]) == (1.0, [])
    rate, mism = compare_with_reference([a], [moved])
    assert rate == 0.0 and mism[0]["box_diff"] == 4
    assert compare_with_reference([a], [dict(a, text="helloworld")])[0] == 0.0
    assert compare_with_reference([a], [dict(a, text="helloworld")], ignore_spaces=True)[0] == 1.0
    assert compare_with_reference([], []) == (1.0, [])


def test_reference_lines_are_plausible(docs, reference):
    n_ref = sum(len(r) for r in reference)
    n_gt = sum(len(d.lines) for d in docs)
    assert n_ref >= 0.95 * n_gt, (n_ref, n_gt)


@pytest.mark.parametrize("max_batch_size", [None, 1], ids=["batched", "one-at-a-time"])
def test_default_config_matches_reference(config, runners, docs, reference, max_batch_size):
    chain = variant(config, runners, ["det", "rec"])
    rate, bad, total = summary(reference, run_all(chain, docs, max_batch_size))
    assert rate >= MIN_MATCH, (rate, total, bad)


@pytest.mark.parametrize("max_batch_size", [None, 1], ids=["batched", "one-at-a-time"])
def test_bucket_policy_matches_reference_up_to_spaces(config, runners, docs, reference, max_batch_size):
    chain = variant(config, runners, ["det", "rec"], **BUCKETS)
    ours = run_all(chain, docs, max_batch_size)
    rate, bad, total = summary(reference, ours, ignore_spaces=True)
    assert rate >= MIN_MATCH, (rate, total, bad)

    # ... and is at least as accurate as PaddleOCR against the rendered ground truth
    def exact(lines_per_doc):
        return sum(
            sum(1 for g, line in zip(d.lines, lines) if g.text == _line(line).text)
            for d, lines in zip(docs, lines_per_doc)
        )

    assert exact(ours) >= exact(reference), (exact(ours), exact(reference))


def test_cls_chain_matches_reference_with_angle_cls(config, runners, docs):
    indices, reference = ocr_data.cls_reference("sample")
    assert indices == list(range(0, len(docs), 3))
    subset = [docs[i] for i in indices]
    chain = variant(config, runners, ["det", "cls", "rec"])
    rate, bad, total = summary(reference, run_all(chain, subset))
    assert rate >= MIN_MATCH, (rate, total, bad)


def test_rec_source_op_matches_reference_rec_only(config, runners):
    """configs/rec.yml style: the request is one crop; compare with PaddleOCR's ocr(det=False)."""
    from serving.batching.direct import run_op_direct

    crops = ocr_data.rec_crops()
    assert any(not c.text.isascii() for c in crops)  # Chinese included
    ((rec, runner),) = variant(config, runners, ["rec"], rec={"pad_policy": "paddleocr"})
    for crop in crops:
        ours = run_op_direct(rec, runner, {"input": crop.image})
        assert ours["text"] == crop.ref_text, crop.name
        assert abs(ours["score"] - crop.ref_score) < 0.02, crop.name


# English, Chinese and mixed pages: small, so the live PaddleOCR run stays a few seconds
LIVE_PAGES = ("02-en-3x24", "07-zh-4x28", "09-mixed-5x26")


def test_committed_answers_are_what_paddleocr_gives(docs, reference):
    """The installed PaddleOCR 2.10, run now, still gives the committed answers
    (text exactly, boxes within 1 px, scores within 0.005) on a few pages and a
    rec-only crop: the committed reference cannot rot silently."""
    ocr = make_reference()
    by_name = {d.name: i for i, d in enumerate(docs)}
    for name in LIVE_PAGES:
        i = by_name[name]
        live = run_reference(ocr, docs[i].image)
        assert [line.text for line in live] == [line.text for line in reference[i]], name
        for got, want in zip(live, reference[i]):
            assert box_distance(got.box, want.box) <= 1.0, (name, got, want)
            assert abs(got.score - want.score) <= 0.005, (name, got, want)
    crop = next(c for c in ocr_data.rec_crops() if not c.text.isascii())
    live_text, live_score = ocr.ocr(crop.image, det=False, cls=False)[0][0]
    assert live_text == crop.ref_text and abs(live_score - crop.ref_score) <= 0.005
