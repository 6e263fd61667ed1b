"""Text helpers for ERNIE-style ops: WordPiece tokenizer, length buckets, padding.

The tokenizer is built from a BERT/ERNIE ``vocab.txt`` (one token per line,
line number = id) with HF ``tokenizers``: BERT normalizer (clean text, CJK
characters split apart, lowercase, accents stripped), BERT pre-tokenizer
(whitespace + punctuation), WordPiece (``##`` continuation prefix) and the
``[CLS] $A [SEP]`` template. Nothing is cached here: callers (ops) own the
tokenizer they build.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)


def read_vocab(path: str) -> dict[str, int]:
    """``vocab.txt`` -> {token: id}; the id is the 0-based line number.

    Only the trailing newline is stripped, so tokens that are themselves
    whitespace-like characters keep their line (and id). Duplicate tokens
    keep their first id.
    """
    vocab: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for idx, line in enumerate(f):
            token = line.rstrip("\r\n")
            vocab.setdefault(token, idx)
    missing = [t for t in (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN) if t not in vocab]
    if missing:
        raise ValueError(f"vocab {path!r} lacks special tokens {missing}")
    return vocab


def read_labels(path: str) -> list[str]:
    """``labels.txt`` -> list of labels (one per line, blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def build_tokenizer(vocab_path: str, max_seq_len: int = 128, lowercase: bool = True) -> Tokenizer:
    """A BERT/ERNIE WordPiece ``tokenizers.Tokenizer`` truncating to ``max_seq_len``.

    ``max_seq_len`` counts [CLS] and [SEP]. No padding: ops pad per bucket.
    """
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from tokenizers.processors import TemplateProcessing

    if max_seq_len < 3:
        raise ValueError(f"max_seq_len must be >= 3, got {max_seq_len}")
    vocab = read_vocab(vocab_path)
    tok = Tokenizer(WordPiece(vocab, unk_token=UNK_TOKEN, max_input_chars_per_word=100))
    tok.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase)
    tok.pre_tokenizer = BertPreTokenizer()
    tok.post_processor = TemplateProcessing(
        single=f"{CLS_TOKEN} $A {SEP_TOKEN}",
        special_tokens=[(CLS_TOKEN, vocab[CLS_TOKEN]), (SEP_TOKEN, vocab[SEP_TOKEN])],
    )
    tok.enable_truncation(max_length=max_seq_len)
    tok.no_padding()
    return tok


def encode(tokenizer: Tokenizer, text: str) -> list[int]:
    """Token ids of one text, with [CLS]/[SEP], truncated as configured."""
    return list(tokenizer.encode(text).ids)


def pick_bucket(length: int, buckets: Sequence[int]) -> int:
    """Smallest bucket >= ``length`` (buckets sorted ascending); else ``length``."""
    i = bisect.bisect_left(buckets, length)
    return buckets[i] if i < len(buckets) else length


def group_by_bucket(lengths: Sequence[int], buckets: Sequence[int]) -> dict[int, list[int]]:
    """Indices grouped by their bucket, buckets ascending, indices in order."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(pick_bucket(n, buckets), []).append(i)
    return dict(sorted(groups.items()))


def pad_ids(seqs: Sequence[Sequence[int]], length: int, pad_id: int = 0) -> np.ndarray:
    """int64 [len(seqs), length] right-padded with ``pad_id``."""
    out = np.full((len(seqs), length), pad_id, dtype=np.int64)
    for row, ids in enumerate(seqs):
        if len(ids) > length:
            raise ValueError(f"sequence of {len(ids)} tokens does not fit length {length}")
        out[row, : len(ids)] = ids
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over the last axis (float64)."""
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)
