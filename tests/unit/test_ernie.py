"""ERNIE op: tokenizer, bucketed collate, batched == unbatched, the embedded model."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from pydantic import ValidationError

from ops import text as T
from ops.ernie import Encoded, ErnieClsOp
from serving.engine.direct import run_op_direct
from serving.errors import BadRequest
from tests.support.ops import make_op as make_real_op
from tests.support.ops import ocr_model_dir, runner_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(ROOT, "pipelines", "ernie_fields", "model")
VOCAB = os.path.join(MODEL_DIR, "vocab.txt")


def _vocab_lines() -> list[str]:
    with open(VOCAB, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _ids(tokens: list[str]) -> list[int]:
    """Token strings -> ids by line number in vocab.txt (independent of `tokenizers`)."""
    lines = _vocab_lines()
    return [lines.index(t) for t in tokens]


def make_op(name: str = "ernie", **params) -> ErnieClsOp:
    op = make_real_op(ErnieClsOp, ErnieClsOp.Params(**params), model_dir=MODEL_DIR, name=name, max_batch_size=32)
    op.load()
    return op


@pytest.fixture(scope="module")
def op() -> ErnieClsOp:
    return make_op()


@pytest.fixture(scope="module")
def runner(op):
    return runner_for(op)


# ---------------------------------------------------------------------------
# tokenizer
# ---------------------------------------------------------------------------
def test_vocab_layout():
    lines = _vocab_lines()
    assert lines[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(lines) == len(set(lines))
    assert {"tel", "march", "street", "##0", "##a", "电", "话"} <= set(lines)


def test_tokenizer_english_lowercase_and_wordpieces():
    tok = T.build_tokenizer(VOCAB, 128)
    enc = tok.encode("TEL: 138-1234 March")
    expected = ["[CLS]", "tel", ":", "1", "##3", "##8", "-", "1", "##2", "##3", "##4", "march", "[SEP]"]
    assert enc.tokens == expected
    assert enc.ids == _ids(expected)
    assert enc.ids[0] == 2 and enc.ids[-1] == 3


def test_tokenizer_chinese_chars_split():
    tok = T.build_tokenizer(VOCAB, 128)
    enc = tok.encode("电话010北京市Main街")
    expected = ["[CLS]", "电", "话", "0", "##1", "##0", "北", "京", "市", "main", "街", "[SEP]"]
    assert enc.tokens == expected
    assert T.encode(tok, "电话010北京市Main街") == _ids(expected)


def test_tokenizer_unknown_and_truncation():
    tok = T.build_tokenizer(VOCAB, 6)
    assert tok.encode("\U0001f600").ids == [2, 1, 3]  # emoji -> [UNK]
    ids = T.encode(tok, "one two three four five six seven")
    assert ids == _ids(["[CLS]", "one", "two", "three", "four", "[SEP]"])
    with pytest.raises(ValueError):
        T.build_tokenizer(VOCAB, 2)


def test_bucket_helpers():
    assert T.pick_bucket(3, [16, 32]) == 16
    assert T.pick_bucket(16, [16, 32]) == 16
    assert T.pick_bucket(17, [16, 32]) == 32
    assert T.pick_bucket(40, [16, 32]) == 40
    assert T.group_by_bucket([20, 5, 16, 33], [16, 32, 64]) == {16: [1, 2], 32: [0], 64: [3]}
    arr = T.pad_ids([[2, 7, 3], [2, 3]], 4)
    assert arr.dtype == np.int64 and arr.tolist() == [[2, 7, 3, 0], [2, 3, 0, 0]]


# ---------------------------------------------------------------------------
# op: params, validation, expand/merge
# ---------------------------------------------------------------------------
def test_params_validation():
    p = ErnieClsOp.Params()
    assert p.max_seq_len == 128 and p.length_buckets == [16, 32, 64, 128] and p.field == "text"
    assert ErnieClsOp.Params(length_buckets=[64, 16, 16]).length_buckets == [16, 64]
    for bad in ({"nope": 1}, {"max_seq_len": 2}, {"length_buckets": []}, {"labels": []}, {"labels": ["a", "a"]}):
        with pytest.raises(ValidationError):
            ErnieClsOp.Params(**bad)


def test_registered():
    from serving.config.op_classes import resolve_op_class

    assert resolve_op_class("ernie_cls") is ErnieClsOp
    assert ErnieClsOp.input_kind == "text" and ErnieClsOp.needs_model is True


def test_buckets_capped_by_max_seq_len():
    assert make_op(max_seq_len=48).buckets == [16, 32, 48]
    assert make_op(max_seq_len=256).buckets == [16, 32, 64, 128, 256]
    with pytest.raises(ValueError, match="max_position"):
        make_op(max_seq_len=1024)  # the model has 512 positions (config.json)


@pytest.mark.parametrize("bad", [None, 123, b"bytes", ["a"], "", "   \n\t"])
def test_bad_text_is_bad_request(op, bad):
    with pytest.raises(BadRequest):
        op.preprocess(bad)


def test_source_expand(op):
    assert op.expand({"input": "hello"}) == ["hello"]


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


def test_custom_field():
    op2 = make_op(field="words")
    assert op2.expand({"rec": [{"words": "abc"}, {"text": "x"}]}) == ["abc"]


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
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


# what PaddleOCR (and so our ocr pipeline) really returns for printed lines: spaces dropped, I read as l
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


def _mixed_texts(n: int = 60, seed: int = 7) -> list[str]:
    from pipelines.ernie_fields.data import generate

    rng = random.Random(seed)
    texts = [t for t, _ in generate(n // 6, seed)]
    # some long lines (several buckets) mixed in
    texts += [" ".join(rng.choice(texts) for _ in range(rng.randint(3, 12))) for _ in range(n // 4)]
    rng.shuffle(texts)
    return texts


def test_batched_equals_unbatched_direct(op, runner):
    texts = _mixed_texts()
    lines = [{"text": t} for t in texts]
    single = [run_op_direct(op, runner, {"input": t}, max_batch_size=1) for t in texts]
    batched = run_op_direct(op, runner, {"rec": lines}, max_batch_size=32)
    assert len(batched) == len(texts)
    for s, b in zip(single, batched):
        assert s["label"] == b["label"]
        assert abs(s["score"] - b["label_score"]) < 1e-4


def test_batched_equals_unbatched_collate(op, runner):
    texts = _mixed_texts(seed=11)
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


def test_length_buckets_reduce_padding(op):
    items = [op.preprocess(t) for t in _mixed_texts(120, seed=3)]
    lengths = [len(it.ids) for it in items]
    subs = op.collate(items)
    bucketed = 1 - sum(s.real_units for s in subs) / sum(s.padded_units for s in subs)
    single = 1 - sum(lengths) / (len(lengths) * max(lengths))  # one pad-to-longest batch
    assert bucketed < single
    assert bucketed < 0.5 * single


def test_warmup_items_cover_buckets(op):
    items = op.warmup_items()
    assert [len(it.ids) for it in items] == op.buckets
    assert all(isinstance(it, Encoded) for it in items)
    assert [s.feed["input_ids"].shape[1] for s in op.collate(items)] == op.buckets


def test_labels_override(runner):
    op2 = make_op(labels=["a", "b", "c", "d", "e", "f"])
    assert run_op_direct(op2, runner, {"input": "2024-03-15"})["label"] == "a"
    op3 = make_op(labels=["a", "b"])
    with pytest.raises(Exception, match="logits"):
        run_op_direct(op3, runner, {"input": "2024-03-15"})


# ---------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------
def test_ernie_config_loads():
    from serving.config import load_config

    cfg = load_config(os.path.join(ROOT, "configs", "ernie.yml"))
    (op_conf,) = cfg.ops
    assert op_conf.cls == "ernie_cls" and op_conf.op_class is ErnieClsOp
    svc = op_conf.local_service_conf
    assert os.path.samefile(svc.model_config, MODEL_DIR)
    assert svc.max_batch_size == 32 and svc.max_queue_delay == 5 and svc.thread_num == 2


def test_ocr_ernie_config_loads():
    pytest.importorskip("ops.ocr_det")
    pytest.importorskip("ops.ocr_rec")
    from serving.config import load_config

    cfg = load_config(os.path.join(ROOT, "configs", "ocr_ernie.yml"))
    by_name = {o.name: o for o in cfg.ops}
    assert by_name["rec"].input_ops == ["det"] and by_name["ernie"].input_ops == ["rec"]
    assert by_name["ernie"].op_class is ErnieClsOp


def test_ocr_chain_labels_recognised_lines(runner):
    """det -> rec -> ernie on a rendered image: rec's line dicts come back labelled."""
    pytest.importorskip("ops.ocr_det")
    pytest.importorskip("ops.ocr_rec")
    pytest.importorskip("rapidocr_paddle")
    from PIL import Image, ImageDraw, ImageFont

    from ops.ocr_det import OcrDetOp
    from ops.ocr_rec import OcrRecOp
    from serving.engine.direct import run_chain_direct

    chain = []
    for name, cls, model in (("det", OcrDetOp, "ch_PP-OCRv4_det_infer"), ("rec", OcrRecOp, "ch_PP-OCRv4_rec_infer")):
        ocr_op = make_real_op(cls, name=name, model_dir=ocr_model_dir(model), load=True, max_batch_size=32)
        chain.append((ocr_op, runner_for(ocr_op)))
    ernie = make_op()
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
