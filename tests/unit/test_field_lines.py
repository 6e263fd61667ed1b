"""The field classifier's training lines and its evaluation: OCR-like noise, the
generator, the OCR-read lines file, and the scoring of read pages."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest

from recipes.ernie_fields.data import GENERATORS, LABELS, generate, read_labelled
from recipes.ernie_fields.field_keys import KEYS, key_prefix
from recipes.ernie_fields.ocr_noise import CONFUSABLE, FULL_WIDTH, ocr_noise
from tests.support.field_eval import PageReading, ReadLine, score, table
from tests.support.field_pages import BLIND, BLIND2, HANDWRITTEN, FieldLine, FieldPage, fixture_pages, read_lines
from tests.support.ocr_accuracy import assign_lines

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCR_LINES = os.path.join(ROOT, "recipes", "ernie_fields", "ocr_lines.tsv")


# ---- OCR-like noise ------------------------------------------------------------------
def test_noise_is_deterministic_from_the_rng():
    texts = [t for t, _ in generate(20, 3)]
    assert [ocr_noise(t, random.Random(5)) for t in texts] == [ocr_noise(t, random.Random(5)) for t in texts]


def test_noise_makes_each_kind_of_ocr_error():
    rng = random.Random(0)
    text = "Invoice No. IO-2026: Total $150.00, Page 1"
    noisy = [ocr_noise(text, rng) for _ in range(400)]
    assert any(" " not in n for n in noisy), "all word spaces dropped"
    assert any(0 < n.count(" ") < text.count(" ") for n in noisy), "some spaces dropped"
    assert any("lnvoice" in n or "1nvoice" in n or "|nvoice" in n for n in noisy), "I read as l, 1 or |"
    assert any(ch in n for n in noisy for ch in FULL_WIDTH.values()), "full-width punctuation"
    assert sum(n == text for n in noisy) < len(noisy) // 2
    assert all(n for n in noisy)


def test_confusions_stay_within_their_shapes():
    for ch, options in CONFUSABLE.items():
        assert ch not in options and options


def test_noise_keeps_short_and_chinese_lines_non_empty():
    rng = random.Random(1)
    for text in ("a", "号", "¥5", "地址：上海市浦东新区张江路88号"):
        assert all(ocr_noise(text, rng) for _ in range(50))


# ---- the generator --------------------------------------------------------------------
def test_generated_lines_use_only_characters_ocr_can_read():
    """But for the euro and pound signs: PP-OCR's dictionary lacks them, and what OCR
    makes of them (nothing, or another sign) is in the OCR-read training lines."""
    from recipes.ernie_fields.build import EXTRA_CHARS, default_char_dict

    with open(default_char_dict(), encoding="utf-8") as f:
        readable = {line.rstrip("\n") for line in f} | {" "}
    unreadable = Counter(ch for text, _ in generate(500, 11) for ch in text if ch not in readable)
    assert set(unreadable) <= set(EXTRA_CHARS)


def test_every_label_draws_from_the_wider_keys():
    rng = random.Random(2)
    for label in ("date", "money", "phone", "id", "address"):
        lines = [GENERATORS[label](rng) for _ in range(400)]
        keys = {k.lower() for k in KEYS[label]}
        hits = sum(any(line.lower().startswith(k) for k in keys) for line in lines)
        assert hits > 100, label
    assert key_prefix(random.Random(0), "date").strip()


def test_generate_is_balanced_and_deterministic():
    data = generate(50, 9)
    assert data == generate(50, 9)
    assert Counter(y for _, y in data) == dict.fromkeys(range(len(LABELS)), 50)


# ---- labelled line files --------------------------------------------------------------
def test_labelled_files_parse_and_errors_name_file_and_line(tmp_path):
    path = tmp_path / "lines.tsv"
    path.write_text("# comment\ndate\t2026-01-01\n\nmoney\t$5\n", encoding="utf-8")
    assert read_labelled(str(path)) == [("date", "2026-01-01"), ("money", "$5")]
    path.write_text("date\t2026-01-01\nsalary\t$5\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"lines\.tsv:2: .*'salary\\t\$5'"):
        read_labelled(str(path))
    with pytest.raises(ValueError, match=":1: expected 3"):
        read_labelled(str(path), columns=3)


def test_the_committed_ocr_lines_are_what_ocr_read():
    rows = read_labelled(OCR_LINES, 3)
    assert len(rows) > 2000
    assert Counter(label for label, _, _ in rows).keys() == set(LABELS)
    misread = [row for row in rows if row[1] != row[2]]
    assert len(misread) > len(rows) // 3  # dropped spaces, confused characters, split lines
    assert any(" " in rendered and " " not in read for _, read, rendered in misread)


def test_evaluation_lines_are_balanced_and_disjoint():
    hand, blind, blind2 = read_lines(HANDWRITTEN), read_lines(BLIND), read_lines(BLIND2)
    assert set(Counter(label for label, _ in blind).values()) == {30}
    assert min(Counter(label for label, _ in blind2).values()) >= 25  # less the lines blind.tsv also has
    assert min(Counter(label for label, _ in hand).values()) >= 10
    texts = [{t for _, t in lines} for lines in (hand, blind, blind2)]
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])


def test_fixture_pages_load_with_their_truth():
    for name in ("generated", "handwritten", "blind", "blind2"):
        pages = fixture_pages(name)
        assert pages and all(p.image.ndim == 3 and p.lines for p in pages)
        assert {line.label for p in pages for line in p.lines} <= set(LABELS)
    assert [(ln.label, ln.text) for p in fixture_pages("blind") for ln in p.lines] == read_lines(BLIND)


# ---- scoring ------------------------------------------------------------------------------
def _box(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_ocr_lines_go_to_the_truth_line_they_overlap():
    truth = [FieldLine("Date 2026-01-01", "date", _box(0, 0, 200, 20)), FieldLine("$5", "money", _box(0, 40, 50, 60))]
    ocr = [
        {"text": "Date", "box": _box(0, 0, 60, 20)},
        {"text": "2026-01-01", "box": _box(80, 0, 200, 20)},
        {"text": "noise", "box": _box(500, 500, 600, 520)},
        {"text": "$5", "box": _box(0, 41, 50, 61)},
    ]
    assert assign_lines(truth, ocr) == [0, 0, None, 1]


def test_score_counts_ocr_misread_and_clean_lines_per_field():
    import numpy as np

    page = FieldPage(
        "p",
        np.zeros((4, 4, 3), np.uint8),
        [FieldLine("Date 2026-01-01", "date", _box(0, 0, 1, 1)), FieldLine("$5", "money", _box(0, 2, 1, 3))],
    )
    reading = PageReading(
        page,
        [
            ReadLine("Date 2026-01-01", "date", "Date2026-01-01", "date"),  # misread, right
            ReadLine("$5", "money", "$5", "id"),  # read exactly, wrong label
        ],
        missed=0,
        extra=1,
    )
    scores = score([reading], clean_labels=["date", "money"])
    assert scores.accuracy("ocr") == 0.5 and scores.lines("ocr") == 2
    assert scores.accuracy("misread") == 1.0 and scores.lines("misread") == 1
    assert scores.accuracy("clean") == 1.0
    assert scores.accuracy("ocr", "money") == 0.0 and scores.extra == 1
    assert table(scores)[-1] == ["all", "100.0% (2)", "50.0% (2)", "100.0% (1)"]
    with pytest.raises(ValueError, match="1 clean labels for 2"):
        score([reading], clean_labels=["date"])
