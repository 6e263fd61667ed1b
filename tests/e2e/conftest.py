"""Session fixtures shared by the OCR e2e tests: the committed pages and
PaddleOCR 2.10's answers for them (tests/data/ocr/, see tests/support/ocr_data.py).

Nothing is rendered with a font or computed by PaddleOCR here, so no test skips
for lack of the Chinese font; test_ocr_reference.py checks live, on a few
pages, that the installed PaddleOCR still gives the committed answers."""

import pytest


@pytest.fixture(scope="session")
def docs():
    """``synth.sample_documents(0)``: 12 varied pages with their ground truth."""
    from tests.support import ocr_data

    return ocr_data.pages("sample")


@pytest.fixture(scope="session")
def reference():
    """PaddleOCR's lines for each page of ``docs``."""
    from tests.support import ocr_data

    return ocr_data.reference("sample")


@pytest.fixture(scope="session")
def short_docs():
    """16 pages whose rec crops all pad to 320 px under PaddleOCR's padding."""
    from tests.support import ocr_data

    return ocr_data.pages("short")


@pytest.fixture(scope="session")
def short_reference():
    from tests.support import ocr_data

    return ocr_data.reference("short")
