"""Session fixtures shared by the OCR e2e tests: the committed pages and
PaddleOCR 2.10's answers for them (tests/data/ocr/, see tests/support/ocr_data.py).

Nothing is rendered with a font or computed by PaddleOCR here, so no test skips
for lack of the Chinese font; test_ocr_reference.py checks live, on a few
pages, that the installed PaddleOCR still gives the committed answers.

And Debian's Chromium for the page's browser tests (test_page_browser.py
drives it with Playwright)."""

import os

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


@pytest.fixture(scope="session")
def chromium(request):
    """Debian's Chromium, installed with apt-get when missing (as root); skipped where it cannot be."""
    from tests.support.chromium import CHROMIUM, ChromiumUnavailable, find_or_install

    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")

    def say(line: str) -> None:  # on the terminal, past pytest's capture: an install takes minutes
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(line)

    missing = not os.path.exists(CHROMIUM)
    if missing:
        say(f"{CHROMIUM} is missing: installing Debian's chromium for the browser tests (apt-get, takes minutes)")
    try:
        path = find_or_install(CHROMIUM)
    except ChromiumUnavailable as exc:
        pytest.skip(f"no browser for the page tests: {exc}")
    if missing:
        say(f"installed {path}")
    return path
