"""The page at ``/`` in a real browser (Debian's Chromium driven by Playwright),
served by real ``batchline serve`` processes: the page's own files, as shipped.

* on the real OCR pipeline (configs/ocr.yml): an uploaded page's lines and
  boxes are the API's answer for the same image, with per-op timings; the
  live view follows requests while they flow (and the tutorial's screenshot is
  taken there: ``UPDATE_PAGE_SCREENSHOT=1`` writes docs/page.png);
* on fake pipelines that answer chosen text: markup read from an image stays
  text, dropped and pasted images are sent, a text pipeline shows its label;
* with ``auth_token``: the page asks for the token, sends it as the bearer
  header only, asks again when it is refused, and stores it nowhere;
* the page's own arithmetic, run in the browser: its Prometheus parser reads
  what the Python client's reads, and its live figures are the right rates.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from client import PipelineClient
from tests.support.image_fakes import encode_png, image_config, make_image
from tests.support.page_driver import (
    choose_pipeline,
    drawn_boxes,
    open_page,
    save_screenshot,
    shown_lines,
    stat,
    upload,
    wait_for_answer,
)
from tests.support.page_fakes import FIELD_LABEL_OP, FIXED_LINES_OP
from tests.support.server_process import ROOT, ServerProcess
from tests.support.waiting import until

pytestmark = pytest.mark.slow

INVOICE = Path(ROOT) / "tests" / "data" / "ocr" / "invoice" / "invoice.png"
HOSTILE = ["<img src=x onerror=window.__pwned=1>", "<script>window.__pwned=2</script>", "a & b </li>"]
TOKEN = "s3cret-token"
SCREENSHOT = Path(ROOT) / "docs" / "page.png"


@pytest.fixture(scope="module")
def browser(chromium):
    """Playwright driving that Chromium (a fresh context per test). Module scope, not session:
    Playwright's sync API keeps an asyncio loop running in the main thread while it is open,
    and later tests' own asyncio.run() would then fail."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the test extra installs playwright")
    from tests.support.chromium import launch_args

    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=launch_args())
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def ocr_server():
    with ServerProcess(os.path.join("configs", "ocr.yml")) as srv:
        yield srv


def fake_configs(tmp: Path, extra: str = "") -> list[str]:
    """An image pipeline ``lines`` answering HOSTILE (with labels) and a text pipeline ``fields``."""
    lines = tmp / "lines.yml"
    lines.write_text(
        image_config(
            name="lines",
            op_class=FIXED_LINES_OP,
            delay_ms=1,
            params={"lines": HOSTILE, "labels": ["<b>other</b>", "date", "money"]},
            extra=extra,
        )
    )
    fields = tmp / "fields.yml"
    fields.write_text(
        f"name: fields\n{extra}\nop:\n  label:\n    class: {FIELD_LABEL_OP}\n"
        "    local_service_conf: {max_batch_size: 8, max_queue_delay: 2}\n"
    )
    return [str(lines), str(fields)]


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory):
    with ServerProcess(fake_configs(tmp_path_factory.mktemp("page")), ready_timeout=120) as srv:
        yield srv


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    configs = fake_configs(tmp_path_factory.mktemp("page-auth"), extra=f"auth_token: {TOKEN}")
    with ServerProcess(configs[:1], ready_timeout=120) as srv:
        yield srv


def fake_png(seed: int = 0) -> bytes:
    return encode_png(make_image(240, 120, seed=seed))


# ----------------------------------------------------------------------------- the real OCR pipeline


def test_the_page_draws_what_the_api_reads(browser, ocr_server):
    with PipelineClient(ocr_server.url, timeout=120) as client:
        (answer,) = client.predict("ocr", image=INVOICE.read_bytes())
    assert answer, "the invoice has text"
    with open_page(browser, ocr_server.url) as (page, errors):
        upload(page, INVOICE)
        assert shown_lines(page) == [line["text"] for line in answer]
        assert drawn_boxes(page) == [line["box"] for line in answer]
        assert page.locator("#timings tr[data-op]").evaluate_all("rs => rs.map(r => r.dataset.op)") == ["det", "rec"]
        raw = json.loads(page.text_content("#raw-json"))
        assert raw["results"] == [answer] and raw["timing"][0]["total_ms"] > 0
        assert errors.seen == []


def test_the_live_view_follows_requests_while_they_flow(browser, ocr_server, tmp_path):
    stop = threading.Event()
    sent = []

    def load() -> None:  # one client, back to back, bounded in time and count
        with PipelineClient(ocr_server.url, timeout=120) as client:
            while not stop.is_set() and len(sent) < 2000:
                client.predict("ocr", image=INVOICE.read_bytes())
                sent.append(1)

    with open_page(browser, ocr_server.url) as (page, errors):
        page.select_option("#live-interval", "1000")
        upload(page, INVOICE)
        thread = threading.Thread(target=load, daemon=True)
        thread.start()
        try:
            pipeline, det = "tr[data-pipeline=ocr][data-version='1']", "tr[data-op=det]"
            assert until(lambda: (stat(page, pipeline, "rps") or 0) > 0, timeout=180), page.text_content("#live")
            assert until(lambda: (stat(page, det, "items") or 0) > 0, timeout=60)
            assert (stat(page, det, "mean-batch") or 0) >= 1
            assert page.locator(f"{det} [data-stat=sizes] .size").count() >= 1  # the batch-size distribution
            assert stat(page, pipeline, "errors") == 0
            if os.environ.get("UPDATE_PAGE_SCREENSHOT"):  # the tutorial's picture: let the sparkline fill a little
                assert until(lambda: len(page.get_attribute(f"{pipeline} polyline", "points").split()) >= 20, 60)
                save_screenshot(page, SCREENSHOT)
            else:
                save_screenshot(page, tmp_path / "page.png")
        finally:
            stop.set()
            thread.join(120)
        # and once the load stops, the rate falls back to zero
        assert until(lambda: stat(page, pipeline, "rps") == 0, timeout=60), page.text_content("#live")
        assert errors.seen == []


# ----------------------------------------------------------------------------- fake pipelines, chosen answers


def test_markup_read_from_an_image_stays_text(browser, fake_server):
    with open_page(browser, fake_server.url) as (page, errors):
        choose_pipeline(page, "lines")
        upload(page, fake_png(), name="page.png")
        assert shown_lines(page) == HOSTILE
        labels = page.eval_on_selector_all("[data-role=line-label]", "ns => ns.map(n => n.textContent)")
        assert labels == ["<b>other</b>", "date", "money"]
        titles = page.eval_on_selector_all("#boxes title", "ts => ts.map(t => t.textContent)")
        assert titles == HOSTILE
        # nothing became an element: the only <img> is the picture sent, no <script>, no <b> was made
        assert page.locator("img").count() == 1 and page.locator("#result script, #result b").count() == 0
        assert page.evaluate("window.__pwned") is None
        assert errors.seen == []


def test_a_dropped_or_pasted_image_is_sent(browser, fake_server):
    with open_page(browser, fake_server.url) as (page, errors):
        choose_pipeline(page, "lines")
        for event in ("drop", "paste"):
            before = page.text_content("#raw-json")
            page.evaluate(
                """([event, bytes]) => {
                    const data = new DataTransfer();
                    data.items.add(new File([new Uint8Array(bytes)], "x.png", { type: "image/png" }));
                    const target = event === "drop" ? document.querySelector("#image-input") : document;
                    target.dispatchEvent(event === "drop"
                        ? new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true })
                        : new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
                }""",
                [event, list(fake_png(seed=len(event)))],
            )
            wait_for_answer(page, before)
            assert shown_lines(page) == HOSTILE, event
        assert errors.seen == []


def test_a_text_pipeline_shows_its_label(browser, fake_server):
    with open_page(browser, fake_server.url) as (page, errors):
        choose_pipeline(page, "fields")
        assert page.locator("#image-input").is_hidden() and page.locator("#text-input").is_visible()
        before = page.text_content("#raw-json")
        page.fill("#text", "Due 2024-03-15")
        page.click("#text-input button")
        wait_for_answer(page, before)
        assert page.text_content("[data-role=label]") == "date"
        assert page.locator("#figure").is_hidden()  # no picture for a text
        assert page.locator("#timings tr[data-op=label]").count() == 1
        assert errors.seen == []


# ----------------------------------------------------------------------------- auth_token


def test_the_page_asks_for_the_token_and_keeps_it_out_of_urls_and_storage(browser, auth_server):
    refused = "status of 401"  # the browser logs each refused call; expected here
    with open_page(browser, auth_server.url, expected_errors=refused) as (page, errors):
        sent = []
        page.on("request", lambda r: sent.append((r.url, r.headers.get("authorization"))))
        form = page.locator("#token-form")
        form.wait_for(state="visible")
        assert "needs a token" in page.text_content("#token-message")
        assert until(lambda: page.text_content("#live-status") == "waiting for a token", timeout=30)

        page.fill("#token-input", "wrong")
        page.press("#token-input", "Enter")
        assert until(lambda: "refused" in page.text_content("#token-message"), timeout=30)
        assert form.is_visible() and page.input_value("#token-input") == ""

        page.fill("#token-input", TOKEN)
        page.press("#token-input", "Enter")
        choose_pipeline(page, "lines")
        assert form.is_hidden()
        upload(page, fake_png())
        assert shown_lines(page) == HOSTILE
        assert until(lambda: stat(page, "tr[data-pipeline=lines]", "rps") is not None, timeout=60)

        assert all(TOKEN not in url for url, _ in sent)
        authorized = [url for url, auth in sent if auth == f"Bearer {TOKEN}"]
        assert any(url.endswith("/pipelines") for url in authorized)
        assert any(url.endswith("/metrics") for url in authorized)
        assert any("/lines/predict" in url for url in authorized)
        stored = page.evaluate("[localStorage.length, sessionStorage.length, document.cookie]")
        assert stored == [0, 0, ""] and page.context.cookies() == []

        page.click("#token-forget")  # forgotten: the next call is refused and the form is back
        form.wait_for(state="visible")
        assert errors.seen == []


# ----------------------------------------------------------------------------- the page's arithmetic


def test_the_pages_metrics_parser_reads_what_the_python_client_reads(browser, fake_server):
    """The JS parser against client.stats (the bench's) on the served text and on the format's corners."""
    from client.stats import parse_prometheus

    with PipelineClient(fake_server.url) as client:
        served = client.metrics_text()
    corners = (
        "# HELP x a help line\n"
        'odd{path="a\\\\b",quote="say \\"hi\\"",nl="1\\n2"} 3 1700000000000\n'
        'hist_bucket{le="+Inf"} +Inf\n'
        "gauge -Inf\n"
        "plain_total 4.5e3\n"
    )
    with open_page(browser, fake_server.url) as (page, _errors):
        for text in (served, corners):
            parsed = page.evaluate(
                """async (text) => {
                    const { parsePrometheus } = await import("./page-prometheus.js");
                    const out = [];
                    for (const [name, series] of parsePrometheus(text))
                        for (const s of series) out.push([name, Object.entries(s.labels).sort(), String(s.value)]);
                    return out;
                }""",
                text,
            )
            expected = parse_prometheus(text)
            assert {(n, tuple(map(tuple, ls))): float(v) for n, ls, v in parsed} == expected
        quantiles = page.evaluate(
            """async () => {
                const { quantile, batchDistribution } = await import("./page-rates.js");
                const buckets = [[1, 0], [2, 10], [4, 10], [Infinity, 0]].map(([le, count]) => ({ le, count }));
                const labels = batchDistribution(buckets).map((b) => b.label);
                return [quantile(buckets, 0.5), quantile(buckets, 0.75), labels];
            }"""
        )
        assert quantiles == [2, 3, ["1", "2", "3–4"]]


def test_the_live_figures_are_rates_over_the_window(browser, fake_server):
    """Two scrapes 2 s apart: rates, means, padding and the batch-size distribution; a restart resets."""
    labels = 'pipeline="p",version="1"'
    op = f'{labels},op="a"'
    before = (
        f'batchline_requests_total{{{labels},status="200"}} 10\n'
        f"batchline_op_items_total{{{op}}} 40\nbatchline_op_batch_size_count{{{op}}} 10\n"
        f"batchline_op_batch_size_sum{{{op}}} 40\n"
        f'batchline_op_batch_size_bucket{{{op},le="2.0"}} 0\nbatchline_op_batch_size_bucket{{{op},le="4.0"}} 10\n'
        f"batchline_op_real_units_total{{{op}}} 100\nbatchline_op_padded_units_total{{{op}}} 100\n"
    )
    after = (
        f'batchline_requests_total{{{labels},status="200"}} 30\n'
        f'batchline_requests_total{{{labels},status="503"}} 4\n'
        f"batchline_op_items_total{{{op}}} 80\nbatchline_op_batch_size_count{{{op}}} 20\n"
        f"batchline_op_batch_size_sum{{{op}}} 70\n"
        f'batchline_op_batch_size_bucket{{{op},le="2.0"}} 4\nbatchline_op_batch_size_bucket{{{op},le="4.0"}} 20\n'
        f"batchline_op_real_units_total{{{op}}} 175\nbatchline_op_padded_units_total{{{op}}} 200\n"
    )
    with open_page(browser, fake_server.url) as (page, _errors):
        figures = page.evaluate(
            """async ([before, after]) => {
                const { parsePrometheus } = await import("./page-prometheus.js");
                const { MetricsWindow, opStats, pipelineStats } = await import("./page-rates.js");
                const window = new MetricsWindow(5000);
                window.push(1000, parsePrometheus(before));
                window.push(3000, parsePrometheus(after));
                const [old, cur] = window.pair();
                const [p] = pipelineStats(old, cur);
                const [o] = opStats(old, cur);
                window.push(4000, parsePrometheus(before));  // counters went down: a restarted server
                return [p.rps, p.errors, o.itemsPerS, o.batchesPerS, o.meanBatch, o.padding, o.sizes, window.pair()];
            }""",
            [before, after],
        )
    sizes = [{"label": "1–2", "count": 4}, {"label": "3–4", "count": 6}]
    assert figures == [10, {"503": 2}, 20, 5, 3, 0.25, sizes, None]
