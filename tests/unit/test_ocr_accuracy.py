"""tests/support/ocr_accuracy: char accuracy against ground truth, line parity
and box shift against a reference, on hand-made pages."""

import math

import pytest

from tests.support.ocr_accuracy import (
    PageScore,
    accuracy_delta_interval,
    char_accuracy,
    edit_distance,
    normalize,
    parity,
    score_page,
)


def box(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def line(text, *rect):
    return {"text": text, "box": box(*rect)}


def test_edit_distance():
    assert edit_distance("", "") == 0
    assert edit_distance("abc", "") == edit_distance("", "abc") == 3
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("今天天气", "今天气") == 1
    assert edit_distance("ab", "ba") == 2  # a swap is two edits, not one


def test_normalize_drops_whitespace_and_folds_full_width_forms():
    assert normalize(" Total:  $12.50 ") == "Total:$12.50"
    assert normalize("合计：１２，共 3 件") == "合计:12,共3件"
    assert normalize("。、") == "。、"  # no half-width form: kept


def test_a_perfect_read_scores_one_whatever_the_spaces():
    truth = [line("hello world", 10, 10, 200, 40), line("今天 天气", 10, 60, 150, 90)]
    ocr = [line("helloworld", 6, 6, 204, 44), line("今天天气", 5, 55, 155, 95)]
    score = score_page(truth, ocr)
    assert (score.chars, score.errors, score.missed_lines, score.extra_lines) == (14, 0, 0, 0)
    assert char_accuracy([score]) == 1.0


def test_lines_are_matched_by_position_not_by_order():
    truth = [line("first", 10, 10, 100, 40), line("second", 10, 60, 120, 90)]
    ocr = [line("second", 8, 58, 122, 92), line("first", 8, 8, 102, 42)]
    assert score_page(truth, ocr).errors == 0


def test_a_line_split_in_pieces_is_joined_left_to_right():
    truth = [line("left part right part", 10, 10, 400, 40)]
    ocr = [line("right part", 220, 8, 402, 42), line("left part", 8, 8, 180, 42)]
    score = score_page(truth, ocr)
    assert score.errors == 0 and score.extra_lines == 0


def test_missed_lines_and_false_detections_cost_their_characters():
    truth = [line("abcd", 10, 10, 100, 40), line("efgh", 10, 60, 100, 90)]
    ocr = [line("abXd", 10, 10, 100, 40), line("noise", 500, 500, 600, 530)]
    score = score_page(truth, ocr)
    assert (score.chars, score.missed_lines, score.extra_lines) == (8, 1, 1)
    assert score.errors == 1 + 4 + 5  # a substitution, a missed line, a false detection
    assert char_accuracy([score]) == pytest.approx(1 - 10 / 8)


def test_a_box_barely_touching_a_line_is_a_false_detection():
    truth = [line("abcd", 10, 10, 100, 40)]
    ocr = [line("xy", 90, 35, 190, 95)]  # overlaps 10x5 px of its 100x60
    score = score_page(truth, ocr)
    assert (score.missed_lines, score.extra_lines, score.errors) == (1, 1, 4 + 2)


def test_char_accuracy_sums_over_pages():
    assert char_accuracy([PageScore(10, 1, 1, 0, 0), PageScore(30, 3, 2, 0, 0)]) == pytest.approx(0.9)
    assert char_accuracy([]) == 1.0
    assert char_accuracy([PageScore(0, 2, 0, 0, 1)]) == -math.inf


def test_parity_counts_identical_lines_spaces_included_and_box_shifts():
    ref = [line("hello world", 10, 10, 200, 40), line("ab", 10, 60, 60, 90), line("gone", 10, 120, 60, 150)]
    ours = [line("ab", 13, 64, 63, 94), line("helloworld", 10, 10, 200, 40), line("extra", 400, 400, 500, 430)]
    score = parity(ref, ours)
    assert (score.reference_lines, score.paired, score.identical, score.identical_without_spaces) == (3, 2, 1, 2)
    assert score.extra_lines == 1
    assert score.rate == pytest.approx(1 / 3) and score.rate_without_spaces == pytest.approx(2 / 3)
    assert score.shift_max == pytest.approx(5.0)  # (3, 4) at every corner of "ab"
    assert score.shift_mean == pytest.approx(2.5)
    assert score.shift_quantile(0.5) == 0.0 and score.shift_quantile(0.95) == pytest.approx(5.0)


def test_parity_pairs_each_line_of_ours_once():
    ref = [line("a", 0, 0, 100, 30), line("a", 0, 2, 100, 32)]
    score = parity(ref, [line("a", 0, 1, 100, 31)])
    assert (score.paired, score.identical, score.extra_lines) == (1, 1, 0)


def test_parity_adds_up_over_pages():
    total = parity([line("a", 0, 0, 10, 10)], [line("a", 0, 0, 10, 10)])
    total.add(parity([line("b", 0, 0, 10, 10)], [line("c", 1, 0, 11, 10)]))
    assert (total.reference_lines, total.identical, total.shift_max) == (2, 1, 1.0)
    assert parity([], []).rate == 1.0


def test_the_accuracy_delta_interval_brackets_the_delta():
    base = [PageScore(100, i % 3, 1, 0, 0) for i in range(40)]
    worse = [PageScore(100, i % 3 + (i % 4 == 0), 1, 0, 0) for i in range(40)]
    delta, low, high = accuracy_delta_interval(base, worse, rounds=500)
    assert delta == pytest.approx(-10 / 4000)
    assert low <= delta <= high < 0
    assert accuracy_delta_interval(base, base, rounds=50)[1:] == (0.0, 0.0)
    with pytest.raises(ValueError):
        accuracy_delta_interval(base, worse[:3])
