"""How right the OCR peers' answers are, for bench/ocr_vs_peers.py:

* :func:`char_accuracy_vs_truth`: against the text the pages were rendered
  with (tests/support/synth.py): per page, the ground-truth lines and the
  answer's lines each joined in reading order with spaces removed, then
  1 - (edit distance / ground-truth characters) over all pages. Joining the
  page makes a line split or merged by det cost only the characters it moved.
* :func:`same_text_share`: parity with PaddleOCR 2.10, as
  bench/engine_agreement.py counts it: the share of its lines whose text the
  answer has identically at the same place in the page's reading order.

The edit distance is tests/support/ocr_accuracy.py's. That module's char
accuracy matches lines by box position over the precision page set; this one
joins each page in reading order, because the peers' answers are scored on
the bench pages, where ground truth is a list of lines without boxes.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.support.ocr_accuracy import edit_distance


def page_text(lines: Sequence[str]) -> str:
    """A page's lines in reading order as one string, spaces removed."""
    return "".join(line.replace(" ", "") for line in lines)


def char_accuracy_vs_truth(truth: Sequence[Sequence[str]], answers: Sequence[Sequence[str]]) -> dict:
    """``{"chars", "errors", "accuracy"}`` of ``answers`` (per page, line texts in
    the answer's reading order) against ``truth`` (per page, rendered lines)."""
    if len(truth) != len(answers):
        raise ValueError(f"{len(truth)} ground-truth pages but {len(answers)} answered")
    chars = errors = 0
    for want, got in zip(truth, answers):
        ref = page_text(want)
        chars += len(ref)
        errors += edit_distance(ref, page_text(got))
    return {"chars": chars, "errors": errors, "accuracy": max(0.0, 1.0 - errors / chars) if chars else 1.0}


def same_text_share(reference: Sequence[Sequence[str]], answers: Sequence[Sequence[str]]) -> dict:
    """``{"lines", "same", "share"}``: reference lines whose text the answer has
    identically at the same index of the same page."""
    if len(reference) != len(answers):
        raise ValueError(f"{len(reference)} reference pages but {len(answers)} answered")
    lines = sum(len(page) for page in reference)
    same = sum(x == y for ref, got in zip(reference, answers) for x, y in zip(ref, got))
    return {"lines": lines, "same": same, "share": same / lines if lines else 1.0}
