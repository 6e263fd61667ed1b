"""Session fixtures shared by the OCR e2e tests: the rendered pages and
PaddleOCR 2.10's reading of them (computed once per test session)."""

import pytest


@pytest.fixture(scope="session")
def docs():
    from tests.support.synth import has_chinese_font, sample_documents

    if not has_chinese_font():
        pytest.skip("Chinese font missing: apt-get install fonts-wqy-zenhei")
    return sample_documents(0)


@pytest.fixture(scope="session")
def reference(docs):
    from tests.support.ocr_reference import make_reference, run_reference

    ocr = make_reference()
    return [run_reference(ocr, d.image) for d in docs]
