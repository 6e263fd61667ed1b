"""The ERNIE op on the embedded demo model (pipelines/ernie_fields/model): labels,
batched == unbatched, masked padding, and the det -> rec -> ernie chain.
tests/unit/test_ernie.py has the tokenizer, buckets and params without a model."""

from __future__ import annotations

import numpy as np
import pytest

from ops import text as T
from ops.ernie import ErnieClsOp
from serving.batching.direct import run_op_direct
from tests.support.field_texts import mixed_texts
from tests.support.ops import make_ernie_op, make_op, ocr_model_dir, runner_for


@pytest.fixture(scope="module")
def op() -> ErnieClsOp:
    return make_ernie_op()


@pytest.fixture(scope="module")
def runner(op):
    return runner_for(op)


def test_chained_zero_lines(op, runner):
    assert op.expand({"rec": []}) == []
    assert op.merge({"rec": []}, []) == []
    assert run_op_direct(op, runner, {"rec": []}) == []


def test_chained_skips_empty_lines(op, runner):
    lines = [
        {"text": "Tel: 138-1234-5678", "score": 0.9, "box": [[0, 0]] * 4},
        {"text": "  ", "score": 0.1, "box": [[1, 1]] * 4},
        {"text": "2024-03-15", "score": 0.8, "box": [[2, 2]] * 4},
    ]
    assert op.expand({"rec": lines}) == ["Tel: 138-1234-5678", "2024-03-15"]
    out = run_op_direct(op, runner, {"rec": lines})
    assert [o["label"] for o in out] == ["phone", None, "date"]
    assert out[1]["label_score"] is None
    assert out[0]["box"] == lines[0]["box"] and out[0]["score"] == 0.9  # line kept, copied
    assert "label" not in lines[0]


OBVIOUS = [
    ("2024-03-15", "date"),
    ("2024年3月15日", "date"),
    ("March 15, 2024", "date"),
    ("¥1,234.50", "money"),
    ("USD 99.00", "money"),
    ("总计：345.00元", "money"),
    ("Tel: 138-1234-5678", "phone"),
    ("电话 010-12345678", "phone"),
    ("No. A1234567", "id"),
    ("订单号 20240315001", "id"),
    ("北京市海淀区中关村大街1号", "address"),
    ("221B Baker Street, London", "address"),
    ("Thank you for your purchase", "other"),
    ("欢迎光临", "other"),
]


def test_model_classifies_obvious_examples(op, runner):
    got = {text: run_op_direct(op, runner, {"input": text}) for text, _ in OBVIOUS}
    wrong = {t: (got[t]["label"], want) for t, want in OBVIOUS if got[t]["label"] != want}
    assert not wrong
    res = got["2024-03-15"]
    assert set(res) == {"label", "score", "probs"}
    assert list(res["probs"]) == ["date", "money", "phone", "id", "address", "other"]
    assert abs(sum(res["probs"].values()) - 1.0) < 1e-6 and res["score"] == max(res["probs"].values())


OCR_READ = [
    ("lnvoiceNo.2026-0457", "id"),
    ("Expires2027-03-01", "date"),
    ("Paymentreceived", "other"),
    ("Thankyouforyourpurchase", "other"),
    ("TOTAL$1,234.5O", "money"),
    ("Tel:+86 138OO138000", "phone"),
    ("地址：上海市浦东新区张江路88号", "address"),
]


def test_model_labels_lines_as_ocr_reads_them(op, runner):
    got = {text: run_op_direct(op, runner, {"input": text})["label"] for text, _ in OCR_READ}
    assert got == dict(OCR_READ)


def test_batched_equals_unbatched_direct(op, runner):
    texts = mixed_texts()
    lines = [{"text": t} for t in texts]
    single = [run_op_direct(op, runner, {"input": t}, max_batch_size=1) for t in texts]
    batched = run_op_direct(op, runner, {"rec": lines}, max_batch_size=32)
    assert len(batched) == len(texts)
    for s, b in zip(single, batched):
        assert s["label"] == b["label"]
        assert abs(s["score"] - b["label_score"]) < 1e-4


def test_batched_equals_unbatched_collate(op, runner):
    texts = mixed_texts(seed=11)
    items = [op.preprocess(t) for t in texts]
    subs = op.collate(items)
    assert len(subs) > 1  # mixed lengths -> several buckets
    assert sorted(i for s in subs for i in s.indices) == list(range(len(items)))
    batched = [None] * len(items)
    for sub in subs:
        ids = sub.feed["input_ids"]
        assert ids.dtype == np.int64 and sub.feed["token_type_ids"].shape == ids.shape
        assert not sub.feed["token_type_ids"].any()
        assert ids.shape[1] in op.buckets
        assert sub.padded_units == ids.size
        assert sub.real_units == sum(len(items[i].ids) for i in sub.indices)
        for idx, out in zip(sub.indices, op.uncollate(sub, op.run(runner, sub.feed))):
            batched[idx] = op.postprocess(items[idx], out)
    for item, b in zip(items, batched):
        (sub,) = op.collate([item])
        alone = op.postprocess(item, op.uncollate(sub, op.run(runner, sub.feed))[0])
        assert alone["label"] == b["label"]
        for lab in op.labels:
            assert abs(alone["probs"][lab] - b["probs"][lab]) < 1e-4


def test_padding_is_masked(op, runner):
    item = op.preprocess("Tel: 138-1234-5678")
    tight = T.pad_ids([item.ids], len(item.ids))
    loose = T.pad_ids([item.ids], 128)
    a = runner.run({"input_ids": tight, "token_type_ids": np.zeros_like(tight)})[0]
    b = runner.run({"input_ids": loose, "token_type_ids": np.zeros_like(loose)})[0]
    assert a.shape == (1, 6) and np.allclose(a, b, atol=1e-4)


def test_labels_override(runner):
    op2 = make_ernie_op(labels=["a", "b", "c", "d", "e", "f"])
    assert run_op_direct(op2, runner, {"input": "2024-03-15"})["label"] == "a"
    op3 = make_ernie_op(labels=["a", "b"])
    with pytest.raises(Exception, match="logits"):
        run_op_direct(op3, runner, {"input": "2024-03-15"})


def test_ocr_chain_labels_recognised_lines(runner):
    """det -> rec -> ernie on a rendered image: rec's line dicts come back labelled."""
    pytest.importorskip("ops.ocr_det")
    pytest.importorskip("ops.ocr_rec")
    pytest.importorskip("rapidocr_paddle")
    from PIL import Image, ImageDraw, ImageFont

    from ops.ocr_det import OcrDetOp
    from ops.ocr_rec import OcrRecOp
    from serving.batching.direct import run_chain_direct

    chain = []
    for name, cls, model in (("det", OcrDetOp, "ch_PP-OCRv4_det_infer"), ("rec", OcrRecOp, "ch_PP-OCRv4_rec_infer")):
        ocr_op = make_op(cls, name=name, model_dir=ocr_model_dir(model), load=True, max_batch_size=32)
        chain.append((ocr_op, runner_for(ocr_op)))
    ernie = make_ernie_op()
    chain.append((ernie, runner))

    lines = [
        ("Date: 2024-03-15", "date"),
        ("Total: USD 99.00", "money"),
        ("Tel: 138-1234-5678", "phone"),
        ("221B Baker Street, London", "address"),
    ]
    img = Image.new("RGB", (640, 260), "white")
    draw = ImageDraw.Draw(img)
    try:
        font = ImageFont.truetype("DejaVuSans.ttf", 28)
    except OSError:
        font = ImageFont.load_default(size=28)
    for i, (text, _) in enumerate(lines):
        draw.text((20, 20 + 60 * i), text, fill="black", font=font)
    out = run_chain_direct(chain, np.asarray(img)[:, :, ::-1].copy())
    assert [o["label"] for o in out] == [label for _, label in lines]
    assert all({"text", "score", "box", "label", "label_score"} <= set(o) for o in out)
