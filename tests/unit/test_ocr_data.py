"""The committed OCR test data (tests/data/ocr/): intact, and usable on a
machine with no font installed (the defect: every PaddleOCR parity test skipped,
and one failed, without the Chinese font)."""

import numpy as np
import pytest

from client.fonts import FONT_DIRS_ENV, bundled_font_dir, find_font
from tests.support import ocr_data


def test_every_file_matches_its_manifest_hash():
    assert ocr_data.manifest_problems() == []


def test_manifest_check_catches_a_changed_missing_or_extra_file(tmp_path):
    import shutil

    copy = tmp_path / "ocr"
    shutil.copytree(ocr_data.DATA_DIR, copy)
    page = copy / "sample" / "00-en-1x32.png"
    page.write_bytes(page.read_bytes() + b"\0")
    (copy / "rec_crops" / "00-32.png").unlink()
    (copy / "stray.txt").write_text("x")
    assert ocr_data.manifest_problems(str(copy)) == [
        "missing: rec_crops/00-32.png",
        "not in the manifest: stray.txt",
        "sha256 differs: sample/00-en-1x32.png",
    ]


def test_test_data_loads_and_latin_renders_with_no_font_installed(tmp_path, monkeypatch):
    monkeypatch.setenv(FONT_DIRS_ENV, str(tmp_path))  # an empty directory: no system font at all
    assert find_font("zh") is None

    # what the e2e fixtures load: pages with Chinese text, PaddleOCR's answers, crops
    docs = ocr_data.pages("sample")
    reference = ocr_data.reference("sample")
    assert len(docs) == len(reference) == 12
    assert any(not line.text.isascii() for d in docs for line in d.lines)
    assert all(d.image.dtype == np.uint8 and d.image.ndim == 3 and d.image.shape[2] == 3 for d in docs)
    assert sum(len(r) for r in reference) >= 0.95 * sum(len(d.lines) for d in docs)
    indices, cls_ref = ocr_data.cls_reference("sample")
    assert indices == [0, 3, 6, 9] and all(cls_ref)
    short = ocr_data.pages("short")
    assert len(short) == len(ocr_data.reference("short")) == 16
    (invoice,) = ocr_data.pages("invoice")
    assert [line.text for line in invoice.lines][-1] == "北京市海淀区中关村大街1号"
    crops = ocr_data.rec_crops()
    assert len(crops) == 5 and all(c.ref_text for c in crops)

    # English still renders at run time, with matplotlib's DejaVu rather than PIL's bitmap font
    from tests.support import synth

    assert find_font("en").startswith(bundled_font_dir())
    crop = synth.render_line("Hello World 2024", font_size=32)
    assert crop.shape[0] > 30 and crop.min() < 100  # 32 px TrueType text, dark ink
    doc = synth.random_document(7, n_lines=4, font_size=30)
    assert len(doc.lines) == 4 and doc.lines[0].text.isascii()
    with pytest.raises(RuntimeError, match="no Chinese font"):
        synth.render_line("今天天气很好")


def test_the_e2e_fixtures_need_no_font(tmp_path):
    """The e2e session fixtures themselves (not only the loaders) run with no font installed."""
    import os
    import subprocess
    import sys

    test = "tests/e2e/test_ocr_reference.py::test_reference_lines_are_plausible"  # uses `docs` and `reference`
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ocr_data.ROOT,
        env=dict(os.environ, **{FONT_DIRS_ENV: str(tmp_path)}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0 and "1 passed" in res.stdout and "skip" not in res.stdout, res.stdout + res.stderr
