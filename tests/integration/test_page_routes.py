"""The page's routes through Flask's test client on a fake text pipeline: a
browser gets the page and its files with strict security headers, without a
token; every other request to those paths, and every other route, answers
exactly as before the page existed."""

from __future__ import annotations

import configparser
import fnmatch
import re
from pathlib import Path

import pytest

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import create_app
from serving.http.page import FILES_DIR, INDEX, load_files
from tests.support.engine_fakes import op_conf

ROOT = Path(__file__).resolve().parents[2]
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
TOKEN = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def pipelines():
    started = []

    def make(name: str = "echo") -> Pipeline:
        p = Pipeline(parse_config({"name": name, "op": {"echo": op_conf("EchoTextOp")}}))
        p.start()
        started.append(p)
        return p

    yield make
    for p in started:
        p.shutdown(timeout=5)


@pytest.fixture
def client(pipelines):
    return create_app(pipelines()).test_client()


def no_route(path: str) -> str:
    return f"no route {path!r}; pipelines: echo (GET /pipelines lists them)"


def assert_page_headers(resp) -> None:
    csp = resp.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe" not in csp  # no inline script or style, no eval
    assert "require-trusted-types-for 'script'" in csp
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["Referrer-Policy"] == "no-referrer"


def test_a_browser_gets_the_page_at_the_root(client):
    r = client.get("/", headers=BROWSER)
    assert r.status_code == 200 and r.mimetype == "text/html"
    assert '<script type="module" src="/page-main.js"></script>' in r.get_data(as_text=True)
    assert_page_headers(r)


@pytest.mark.parametrize("headers", [{}, {"Accept": "*/*"}, {"Accept": "application/json"}])
def test_the_root_answers_api_clients_as_before(client, headers):
    r = client.get("/", headers=headers)
    assert r.status_code == 404 and r.get_json()["error"]["message"] == no_route("/")
    assert "Content-Security-Policy" not in r.headers


@pytest.mark.parametrize("method", ["post", "put", "delete", "options"])
def test_other_methods_on_page_paths_answer_as_before(client, method):
    for path in ("/", "/page-main.js"):
        r = getattr(client, method)(path, headers=BROWSER)
        assert r.status_code == 404 and r.get_json()["error"]["message"] == no_route(path), (method, path)


def test_unknown_routes_keep_their_404(client):
    for path in ("/page-nope.js", "/nope", "/echo/nope", "/index.html", "/page_files/page-main.js"):
        r = client.get(path, headers=BROWSER)
        assert r.status_code == 404 and r.get_json()["error"]["message"] == no_route(path), path


def test_every_page_file_is_served_with_its_type_and_the_headers(client):
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    files = load_files()
    assert INDEX in files and "page-main.js" in files
    for name, body in files.items():
        if name == INDEX:
            continue
        r = client.get(f"/{name}")
        assert r.status_code == 200 and r.get_data() == body, name
        assert r.mimetype == types[Path(name).suffix], name
        assert_page_headers(r)


def test_every_file_the_page_names_is_served(client):
    """index.html's links and every module's imports reach served files (a rename would break the page)."""
    files = load_files()
    named = set(re.findall(r'(?:src|href)="\{\{root\}\}/([^"]+)"', files[INDEX].decode()))
    for name, body in files.items():
        if name.endswith(".js"):
            named |= set(re.findall(r'from "\./([^"]+)"', body.decode()))
    assert named and named <= set(files) - {INDEX}


def test_the_page_holds_no_inline_code_and_never_parses_text_as_html():
    """What the CSP enforces in the browser, checked in the files too."""
    files = {name: body.decode() for name, body in load_files().items()}
    assert not re.search(r"<script(?![^>]*\bsrc=)", files[INDEX])  # no inline script
    assert not re.search(r"<style|\sstyle=|\son[a-z]+=", files[INDEX])
    for name, text in files.items():
        if name.endswith(".js"):
            assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(", text), name


def test_a_conditional_get_is_answered_304(client):
    first = client.get("/page-main.js")
    again = client.get("/page-main.js", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304


def test_the_page_follows_the_apps_mount_point(client):
    r = client.get("/", headers=BROWSER, base_url="http://localhost/ocr")
    assert r.status_code == 200
    assert 'src="/ocr/page-main.js"' in r.get_data(as_text=True)


def test_a_pipeline_named_like_a_page_file_keeps_its_routes(pipelines):
    client = create_app(pipelines("page-main.js")).test_client()
    r = client.post("/page-main.js/predict", json={"inputs": [{"text": "hi"}]})
    assert r.status_code == 200 and r.get_json()["results"] == [{"text": "hi", "double_len": 4}]
    assert client.get("/page-main.js/config").get_json()["pipeline"] == "page-main.js"
    assert client.get("/page-main.js").mimetype == "text/javascript"


def test_with_a_token_the_page_loads_without_it_and_its_data_needs_it(pipelines):
    client = create_app(pipelines(), auth_token="s3cret").test_client()
    assert client.get("/", headers=BROWSER).status_code == 200
    assert client.get("/page-main.js").status_code == 200
    for path in ("/pipelines", "/metrics", "/echo/config"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers=TOKEN).status_code == 200, path
    assert client.get("/health/ready").status_code == 200
    # not a page request: the token is asked for first, as before
    assert client.get("/").status_code == 401
    assert client.post("/page-main.js").status_code == 401
    assert client.get("/", headers=TOKEN).status_code == 404


def test_the_page_files_are_package_data():
    """setup.cfg ships every page file in the wheel."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    patterns = parser["options.package_data"]["serving.http"].replace(",", " ").split()
    for name in load_files():
        assert any(fnmatch.fnmatch(f"{FILES_DIR}/{name}", p) for p in patterns), name
