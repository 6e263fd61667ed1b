"""Driving the page at ``/`` in a browser (Playwright), for the e2e tests: open
it, hand it an image, read back what it shows, save a small screenshot."""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PAGE_TIMEOUT_MS = 180_000  # OCR on a loaded 2-core machine: generous, the tests assert behaviour


class BrowserErrors:
    """Console errors and uncaught exceptions of a page (a CSP refusal is a console error)."""

    def __init__(self, page: Any, expected: str | None = None):
        self.expected = re.compile(expected) if expected else None
        self.seen: list[str] = []
        page.on("console", lambda m: self._add(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self._add(f"uncaught: {e}"))

    def _add(self, text: str) -> None:
        if self.expected is None or not self.expected.search(text):
            self.seen.append(text)


@contextmanager
def open_page(browser: Any, url: str, *, expected_errors: str | None = None):
    """A fresh context (no storage shared with other tests) on the page; yields (page, errors)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        errors = BrowserErrors(page, expected_errors)
        response = page.goto(url + "/")
        assert response is not None and response.status == 200, response
        page.wait_for_selector("body[data-loaded=true]", state="attached")
        yield page, errors
    finally:
        context.close()


def wait_for_pipelines(page: Any) -> None:
    """Until a pipeline is chosen and described (its input shown)."""
    page.wait_for_selector("#pipeline[data-chosen]", state="attached")


def choose_pipeline(page: Any, label_start: str) -> None:
    """Pick the option whose label starts with ``label_start``; waits until the page has described it."""
    wait_for_pipelines(page)
    labels = page.eval_on_selector_all("#pipeline option", "os => os.map(o => o.textContent)")
    index = next(i for i, label in enumerate(labels) if label.startswith(label_start))
    page.select_option("#pipeline", str(index))
    page.wait_for_selector(f'#pipeline[data-chosen="{index}"]', state="attached")


def upload(page: Any, image: Path | bytes, *, name: str = "image.png") -> None:
    """Choose an image with the file field, as a user would; waits until the answer is shown."""
    wait_for_pipelines(page)
    page.wait_for_selector("#image-input", state="visible")
    before = page.text_content("#raw-json")
    if isinstance(image, Path):
        page.set_input_files("#file", str(image))
    else:
        page.set_input_files("#file", {"name": name, "mimeType": "image/png", "buffer": image})
    wait_for_answer(page, before)


def wait_for_answer(page: Any, before: str | None) -> None:
    """Until the raw JSON differs from ``before`` (a new answer) or the status shows an error."""
    page.wait_for_function(
        "before => document.querySelector('#raw-json').textContent !== before"
        " || document.querySelector('#try-status').dataset.kind === 'error'",
        arg=before,
    )
    status = page.locator("#try-status")
    assert status.get_attribute("data-kind") == "ok", status.text_content()


def shown_lines(page: Any) -> list[str]:
    return page.eval_on_selector_all("[data-role=line-text]", "ns => ns.map(n => n.textContent)")


def drawn_boxes(page: Any) -> list[list[list[float]]]:
    """The polygons over the image, in image pixels (the SVG's viewBox is the image's own)."""
    points = page.eval_on_selector_all("#boxes polygon", "ps => ps.map(p => p.getAttribute('points'))")
    return [[[float(v) for v in pair.split(",")] for pair in p.split()] for p in points]


def stat(page: Any, row: str, name: str) -> float | None:
    """A live-view figure: ``row`` selects the table row, ``name`` its data-stat cell."""
    cell = page.locator(f"{row} [data-stat={name}]")
    if cell.count() == 0:
        return None
    value = cell.first.get_attribute("data-value")
    return float(value) if value else None


def save_screenshot(page: Any, path: Path, colors: int = 128) -> None:
    """The viewport as a palette PNG: a few dozen KiB instead of a few hundred."""
    from PIL import Image

    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    path.parent.mkdir(parents=True, exist_ok=True)
    shot.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
