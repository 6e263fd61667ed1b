"""ERNIE op without a model: tokenizer, params, length buckets, collate, configs.
tests/integration/test_ernie_model.py runs the embedded demo model."""

from __future__ import annotations

import os

import numpy as np
import pytest
from pydantic import ValidationError

from ops import text as T
from ops.ernie import Encoded, ErnieClsOp
from serving.errors import BadRequest
from tests.support.field_texts import mixed_texts
from tests.support.ops import ERNIE_MODEL_DIR, make_ernie_op

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = os.path.join(ERNIE_MODEL_DIR, "vocab.txt")


def _vocab_lines() -> list[str]:
    with open(VOCAB, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def _ids(tokens: list[str]) -> list[int]:
    """Token strings -> ids by line number in vocab.txt (independent of `tokenizers`)."""
    lines = _vocab_lines()
    return [lines.index(t) for t in tokens]


@pytest.fixture(scope="module")
def op() -> ErnieClsOp:
    return make_ernie_op()


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
    assert make_ernie_op(max_seq_len=48).buckets == [16, 32, 48]
    assert make_ernie_op(max_seq_len=256).buckets == [16, 32, 64, 128, 256]
    with pytest.raises(ValueError, match="max_position"):
        make_ernie_op(max_seq_len=1024)  # the model has 512 positions (config.json)


@pytest.mark.parametrize("bad", [None, 123, b"bytes", ["a"], "", "   \n\t"])
def test_bad_text_is_bad_request(op, bad):
    with pytest.raises(BadRequest):
        op.preprocess(bad)


def test_source_expand(op):
    assert op.expand({"input": "hello"}) == ["hello"]


def test_custom_field():
    op2 = make_ernie_op(field="words")
    assert op2.expand({"rec": [{"words": "abc"}, {"text": "x"}]}) == ["abc"]


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------


# what PaddleOCR (and so our ocr pipeline) really returns for printed lines: spaces dropped, I read as l


def test_length_buckets_reduce_padding(op):
    items = [op.preprocess(t) for t in mixed_texts(120, seed=3)]
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


# ---------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------
def test_ernie_config_loads():
    from serving.config import load_config

    cfg = load_config(os.path.join(ROOT, "configs", "ernie.yml"))
    (op_conf,) = cfg.ops
    assert op_conf.cls == "ernie_cls" and op_conf.op_class is ErnieClsOp
    svc = op_conf.local_service_conf
    assert os.path.samefile(svc.model_config, ERNIE_MODEL_DIR)
    assert svc.max_batch_size == 32 and svc.max_queue_delay == 5 and svc.thread_num == 2


def test_ocr_ernie_config_loads():
    pytest.importorskip("ops.ocr_det")
    pytest.importorskip("ops.ocr_rec")
    from serving.config import load_config

    cfg = load_config(os.path.join(ROOT, "configs", "ocr_ernie.yml"))
    by_name = {o.name: o for o in cfg.ops}
    assert by_name["rec"].input_ops == ["det"] and by_name["ernie"].input_ops == ["rec"]
    assert by_name["ernie"].op_class is ErnieClsOp
