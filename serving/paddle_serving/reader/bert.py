"""``ChineseBertReader``, the text reader of Paddle Serving 0.9's BERT pipeline example, and the BERT
tokenization under it (``FullTokenizer``: clean the text, put spaces around CJK characters, lower-case
and strip accents, split off punctuation, then greedy longest-match WordPiece with ``##`` pieces).

``process(line)`` gives ``input_ids`` ([CLS], then at most ``max_seq_len - 2`` tokens: Paddle Serving
adds no [SEP]), ``position_ids``, ``segment_ids`` and ``input_mask``, each a list of ``max_seq_len``
ints, padded with [PAD]'s id (position and segment ids too, as there).

Written anew rather than on HF ``tokenizers`` (which batchline's ERNIE op uses): its CJK ranges differ
from BERT's in one block (U+2B820-U+2B91F is not split there), so some texts would get other ids than
Paddle Serving gives. Held to the real class by recorded cases (tests/unit/test_paddle_serving_reader.py).
Where ours differs: without ``args["vocab_file"]`` Paddle Serving downloads a vocabulary; here that is
a ``ValueError`` (nothing is fetched at run time)."""

from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np

#: (first, last) code points of the blocks BERT treats as Chinese characters
_CJK_BLOCKS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_LINE_BREAKS = " \t\n\r"
#: ASCII that is neither a letter nor a digit counts as punctuation, whatever its Unicode category
_ASCII_PUNCTUATION = frozenset(
    chr(c) for lo, hi in ((33, 47), (58, 64), (91, 96), (123, 126)) for c in range(lo, hi + 1)
)
UNK, PAD, CLS, SEP, MASK = "[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"


def convert_to_unicode(text: str | bytes) -> str:
    """``str`` as it is, ``bytes`` decoded as UTF-8 (undecodable bytes dropped)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def load_vocab(vocab_file: str) -> dict[str, int]:
    """A ``vocab.txt``: one token per line, its id the line's number, or ``token<TAB>id``; reading stops
    at the first line of more than two fields."""
    vocab: dict[str, int] = {}
    with open(vocab_file, encoding="utf-8") as f:
        for num, line in enumerate(f):
            items = line.strip().split("\t")
            if len(items) > 2:
                break
            vocab[items[0].strip()] = int(items[1]) if len(items) == 2 else num
    return vocab


def whitespace_tokenize(text: str) -> list[str]:
    return text.split()


def _is_whitespace(char: str) -> bool:
    return char in _LINE_BREAKS or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    return char not in _LINE_BREAKS and unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def _is_chinese_char(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_BLOCKS)


class BasicTokenizer:
    """Cleaning, CJK splitting, lower case (accents stripped) and punctuation splitting."""

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text: str | bytes) -> list[str]:
        text = self._tokenize_chinese_chars(self._clean_text(convert_to_unicode(text)))
        split_tokens: list[str] = []
        for token in whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text: str) -> list[str]:
        words: list[list[str]] = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                words.append([char])
                start_new_word = True
                continue
            if start_new_word:
                words.append([])
            start_new_word = False
            words[-1].append(char)
        return ["".join(w) for w in words]

    @staticmethod
    def _tokenize_chinese_chars(text: str) -> str:
        return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)

    @staticmethod
    def _clean_text(text: str) -> str:
        out = []
        for char in text:
            if char in ("\x00", "\ufffd") or _is_control(char):
                continue
            out.append(" " if _is_whitespace(char) else char)
        return "".join(out)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece; a word with no split into the vocabulary (or over
    ``max_input_chars_per_word`` characters) is one ``unk_token``."""

    def __init__(
        self,
        vocab: dict[str, int],
        unk_token: str = UNK,
        max_input_chars_per_word: int = 100,
        use_sentence_piece_vocab: bool = False,
    ):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self.use_sentence_piece_vocab = use_sentence_piece_vocab

    def tokenize(self, text: str | bytes) -> list[str]:
        output: list[str] = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            pieces = self._pieces(token)
            output.extend(pieces if pieces is not None else [self.unk_token])
        return output

    def _pieces(self, word: str) -> list[str] | None:
        if len(word) > self.max_input_chars_per_word:
            return None
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end]
                if start == 0 and self.use_sentence_piece_vocab:
                    piece = "\u2581" + piece
                if start > 0 and not self.use_sentence_piece_vocab:
                    piece = "##" + piece
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:
                return None
            pieces.append(piece)
            start = end
        return pieces


class FullTokenizer:
    """:class:`BasicTokenizer`, then :class:`WordpieceTokenizer` on each of its tokens."""

    def __init__(self, vocab_file: str, do_lower_case: bool = True, use_sentence_piece_vocab: bool = False):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.use_sentence_piece_vocab = use_sentence_piece_vocab
        self.wordpiece_tokenizer = WordpieceTokenizer(self.vocab, use_sentence_piece_vocab=use_sentence_piece_vocab)

    def tokenize(self, text: str | bytes) -> list[str]:
        return [
            piece for token in self.basic_tokenizer.tokenize(text) for piece in self.wordpiece_tokenizer.tokenize(token)
        ]

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [self.vocab[t] for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.inv_vocab[i] for i in ids]


def _padded(seq: list[int], max_len: int, pad_id: int) -> list[int]:
    """Paddle Serving's ``pad_batch_data`` on a batch of one, flattened: ``seq`` padded to ``max_len``
    (a longer one is not cut), reshaped to ``[-1, max_len, 1]`` (where a shape that does not divide fails)."""
    batch = np.array([seq + [pad_id] * (max_len - len(seq))], dtype=np.int64)
    return batch.reshape([-1, max_len, 1]).reshape(-1).tolist()


class ChineseBertReader:
    """``ChineseBertReader({"vocab_file": ..., "max_seq_len": 128})``; ``process(line)`` -> the feed dict."""

    def __init__(self, args: dict[str, Any] | None = None):
        args = args or {}
        if "vocab_file" not in args:
            raise ValueError(
                "ChineseBertReader needs args['vocab_file'] here: Paddle Serving downloads a vocabulary "
                "without it, and nothing is fetched at run time in batchline"
            )
        self.tokenizer = FullTokenizer(vocab_file=args["vocab_file"])
        self.max_seq_len = args.get("max_seq_len", 20)
        self.vocab = self.tokenizer.vocab
        self.pad_id = self.vocab[PAD]
        self.cls_id = self.vocab[CLS]
        self.sep_id = self.vocab[SEP]
        self.mask_id = self.vocab[MASK]
        self.feed_keys = ["input_ids", "position_ids", "segment_ids", "input_mask"]

    def set_feed_keys(self, keys: list[str]) -> None:
        self.feed_keys = keys

    def get_feed_keys(self) -> list[str]:
        return self.feed_keys

    def process(self, line: str | bytes) -> dict[str, list[int]]:
        tokens = self.tokenizer.tokenize(convert_to_unicode(line))
        if len(tokens) > self.max_seq_len - 2:
            tokens = tokens[0 : self.max_seq_len - 2]
        token_ids = self.tokenizer.convert_tokens_to_ids([CLS, *tokens])
        n, length = len(token_ids), self.max_seq_len
        mask = np.array([[1] * n + [0] * (length - n)])
        padded = [
            _padded(token_ids, length, self.pad_id),
            _padded(list(range(n)), length, self.pad_id),
            _padded([0] * n, length, self.pad_id),
            mask.reshape(-1).tolist(),
        ]
        return dict(zip(self.feed_keys, padded))
