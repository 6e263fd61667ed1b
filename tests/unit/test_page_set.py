"""tests/support/page_set: the evaluation pages are the same for a seed, varied
(checked on a full set's recipes, which cost no rendering), and their text is
text PP-OCRv4 can output."""

import numpy as np
import pytest

from tests.support.page_set import (
    CALIBRATION_SEED,
    EVAL_COUNT,
    EVAL_SEED,
    FACES,
    missing_faces,
    page_specs,
    render_page,
    variety,
)
from tests.support.page_text import alphabet


def test_a_full_set_is_at_least_200_varied_pages():
    specs = page_specs()
    assert len(specs) == EVAL_COUNT >= 200
    seen = variety(specs)
    assert seen["script"]["en"] >= 60 and seen["script"]["zh"] >= 60 and seen["script"]["mixed"] >= 30
    assert set(seen["face"]) == {f.name for f in FACES}  # every installed family and face
    assert min(seen["face"].values()) >= 5
    assert len(seen["size"]) >= 8 and min(seen["size"]) <= 20 and max(seen["size"]) >= 40
    assert set(seen["layout"]) == {"block", "center", "right", "columns"}
    assert set(seen["noise"]) == {0, 1, 2, 3} and seen["noise"][0] < len(specs) / 2
    assert all(not s.face.min_size or s.font_size >= s.face.min_size for s in specs)


def test_recipes_are_deterministic_and_seeds_differ():
    assert page_specs(5, 30) == page_specs(5, 30)
    assert page_specs(5, 10) == page_specs(5, 30)[:10]  # a smaller set is a prefix
    assert CALIBRATION_SEED != EVAL_SEED
    calib = {(s.seed, s.script) for s in page_specs(CALIBRATION_SEED, 50)}
    assert not calib & {(s.seed, s.script) for s in page_specs(EVAL_SEED, 50)}


def test_every_character_generated_is_in_the_rec_dictionary():
    from tests.support.ocr_reference import model_dirs

    try:
        path = model_dirs()["dict"]
    except (RuntimeError, FileNotFoundError) as exc:
        pytest.skip(f"no PP-OCRv4 rec dictionary: {exc}")
    with open(path, encoding="utf-8") as f:
        known = set(f.read().splitlines())
    assert alphabet() - known == set()


@pytest.mark.skipif(bool(missing_faces()), reason="the page set's fonts are not all installed")
def test_rendered_pages_are_reproducible_and_carry_their_ground_truth():
    specs = [s for s in page_specs(EVAL_SEED, 12) if s.layout == "columns" or s.index < 5]
    first = [render_page(s) for s in specs]
    again = [render_page(s) for s in specs]
    for page, twin in zip(first, again):
        assert np.array_equal(page.image, twin.image)
        assert [ln.text for ln in page.lines] == [ln.text for ln in twin.lines]
        assert len(page.lines) == page.spec.n_lines and all(ln.text.strip() for ln in page.lines)
        h, w = page.image.shape[:2]
        for ln in page.lines:
            (x0, y0), _, (x1, y1), _ = ln.box
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        used = set("".join(ln.text for ln in page.lines)) - {" "}
        assert used <= alphabet()
    assert {p.spec.script for p in first} >= {"en", "zh"}


@pytest.mark.skipif(bool(missing_faces()), reason="the page set's fonts are not all installed")
def test_noise_keeps_the_page_readable():
    noisy = next(s for s in page_specs(EVAL_SEED, 40) if s.noise_level >= 2)
    page = render_page(noisy)
    ink = page.image.min(axis=2)
    assert ink.min() < 110 and np.percentile(ink, 50) > 160  # dark text on light paper


def test_render_document_aligns_lines_and_takes_a_font_per_line():
    from tests.support.synth import find_font, render_document

    path = find_font("en")
    texts = ["a long first line", "short"]
    left = render_document(texts, fonts=[(path, 0)] * 2)
    right = render_document(texts, fonts=[(path, 0)] * 2, align="right")
    center = render_document(texts, fonts=[(path, 0)] * 2, align="center")
    assert left.lines[0].box == right.lines[0].box == center.lines[0].box  # the widest line sets the width
    assert left.lines[1].box[1][0] < center.lines[1].box[1][0] < right.lines[1].box[1][0] == left.lines[0].box[1][0]
    with pytest.raises(ValueError, match="2 fonts for 1 lines"):
        render_document(["x"], fonts=[(path, 0)] * 2)
