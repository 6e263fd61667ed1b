"""Who may call what, through the real Flask app (Flask's test client) on fake
text pipelines: the 401 challenge, the admin token apart from the prediction
token, browser requests from another origin without a token, the Host
allow-list, and the health probes open through all of it.

Flask's test client sends ``Host: localhost`` over ``http``: the server's own
origin here is ``http://localhost``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from serving.batching.live_pipelines import PipelineRepository
from serving.config import load_repository
from serving.http.app import create_app
from tests.support.engine_fakes import op_conf

PREDICT = "pr3dict-t0ken"
ADMIN = "adm1n-t0ken"
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
HEALTH = ("/health/live", "/health/ready", "/v2/health/live", "/v2/health/ready")


def bearer(token: str, scheme: str = "Bearer") -> dict[str, str]:
    return {"Authorization": f"{scheme} {token}"}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    """``app(auth_token=..., admin_token=..., security=...)``: a test client on a started
    repository of one config file (so that a reload re-reads it)."""
    repos: list[PipelineRepository] = []

    def make(*, auth_token: str | None = None, admin_token: str | None = None, **top: Any) -> Any:
        path = tmp_path / "echo.yml"
        path.write_text(yaml.safe_dump({"name": "echo", "op": {"echo": op_conf("EchoTextOp")}, **top}))
        repo = PipelineRepository(load_repository([str(path)]), warmup=False)
        repos.append(repo)
        repo.start()
        return create_app(repo, auth_token=auth_token, admin_token=admin_token).test_client()

    yield make
    for repo in repos:
        repo.shutdown()


def predict(client: Any, **headers: str) -> Any:
    return client.post("/echo/predict", json={"inputs": [{"text": "hi"}]}, headers=headers)


def paddle_text_plain(client: Any, **headers: str) -> Any:
    """What a page on any site can send without a preflight: a text/plain POST."""
    body = json.dumps({"key": ["text"], "value": ["hi"]})
    return client.post("/echo/prediction", data=body, headers={"Content-Type": "text/plain", **headers})


# ----------------------------------------------------------------------------- 401


def test_a_401_carries_the_bearer_challenge(app):
    """Regression: a 401 carried no WWW-Authenticate (RFC 7235 requires one)."""
    client = app(auth_token=PREDICT)
    missing = predict(client)
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="batchline"'
    wrong = predict(client, **bearer("wrong"))
    assert wrong.status_code == 401
    assert wrong.headers["WWW-Authenticate"] == 'Bearer realm="batchline", error="invalid_token"'
    paddle = client.post("/echo/prediction", data="{}")
    assert paddle.status_code == 401 and paddle.get_json()["err_no"] == 401 and "WWW-Authenticate" in paddle.headers


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer "])
def test_the_scheme_is_case_insensitive(app, scheme):
    """Regression: only "Bearer <token>" exactly was accepted."""
    assert predict(app(auth_token=PREDICT), **bearer(PREDICT, scheme)).status_code == 200


def test_a_wrong_token_is_never_logged_or_echoed(app, caplog):
    client = app(auth_token=PREDICT)
    with caplog.at_level(logging.DEBUG):
        answers = [predict(client, **bearer("guess-" + PREDICT)), client.post("/admin/reload", headers=bearer(ADMIN))]
    for answer in answers:
        assert answer.status_code in (401, 403)
        assert PREDICT not in answer.get_data(as_text=True) and ADMIN not in answer.get_data(as_text=True)
    assert PREDICT not in caplog.text and ADMIN not in caplog.text


# ----------------------------------------------------------------------------- the admin token


def test_reload_needs_the_admin_token_and_only_it(app):
    """Regression: the prediction token also reloaded the server."""
    client = app(auth_token=PREDICT, admin_token=ADMIN)
    assert client.post("/admin/reload").status_code == 401
    refused = client.post("/admin/reload", headers=bearer(PREDICT))
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert "admin_token" in refused.get_json()["error"]["message"]
    answer = client.post("/admin/reload", headers=bearer(ADMIN))
    assert answer.status_code == 200 and answer.get_json()["status"] == "reloaded"
    # nor does the admin token make predictions
    assert predict(client, **bearer(ADMIN)).status_code == 401
    assert predict(client, **bearer(PREDICT)).status_code == 200


def test_without_an_admin_token_reload_is_sighup_only_even_with_a_prediction_token(app):
    client = app(auth_token=PREDICT)
    for headers in ({}, bearer(PREDICT), bearer(ADMIN)):
        answer = client.post("/admin/reload", headers=headers)
        assert answer.status_code == 403, headers
        assert "SIGHUP" in answer.get_json()["error"]["message"]


def test_an_admin_token_alone_leaves_predictions_open(app):
    client = app(admin_token=ADMIN)
    assert predict(client).status_code == 200
    assert client.post("/admin/reload").status_code == 401
    assert client.post("/admin/reload", headers=bearer(ADMIN)).status_code == 200


def test_equal_tokens_work_for_both(app):
    client = app(auth_token=PREDICT, admin_token=PREDICT)
    assert predict(client, **bearer(PREDICT)).status_code == 200
    assert client.post("/admin/reload", headers=bearer(PREDICT)).status_code == 200


# ----------------------------------------------------------------------------- browsers, no token

OTHER_SITES = [
    {"Origin": "https://evil.example"},
    {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"},
    {"Origin": "null"},
]


@pytest.mark.parametrize("headers", OTHER_SITES)
def test_without_a_token_another_origin_is_refused(app, headers):
    """Regression: any web page could make a browser POST to a token-less server on 127.0.0.1."""
    client = app(admin_token=ADMIN)
    assert predict(client, **headers).status_code == 403
    answer = paddle_text_plain(client, **headers)
    assert answer.status_code == 403 and answer.get_json()["err_no"] == 403
    assert "security.allowed_origins" in answer.get_json()["err_msg"]
    assert client.post("/admin/reload", headers={**headers, **bearer(ADMIN)}).status_code == 403
    assert client.get("/pipelines", headers=headers).status_code == 403


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the client
        {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"},  # the page's own POST
        {"Origin": "http://localhost:80"},
        {"Sec-Fetch-Site": "same-origin"},  # the page's own GETs
    ],
)
def test_without_a_token_the_same_origin_and_non_browsers_pass(app, headers):
    client = app()
    assert predict(client, **headers).status_code == 200
    assert paddle_text_plain(client, **headers).get_json()["err_no"] == 0
    assert client.get("/pipelines", headers=headers).status_code == 200
    assert client.get("/metrics", headers=headers).status_code == 200


def test_an_allowed_origin_passes(app):
    client = app(security={"allowed_origins": ["https://app.example.com"]})
    assert predict(client, Origin="https://app.example.com", **{"Sec-Fetch-Site": "cross-site"}).status_code == 200
    assert predict(client, Origin="https://evil.example", **{"Sec-Fetch-Site": "cross-site"}).status_code == 403


def test_with_a_token_the_origin_is_not_checked(app):
    """A browser cannot send the token cross-site without a CORS preflight the server never grants."""
    client = app(auth_token=PREDICT)
    assert predict(client, Origin="https://evil.example", **bearer(PREDICT)).status_code == 200
    assert predict(client, Origin="https://evil.example").status_code == 401


def test_the_page_loads_from_a_link_on_another_site(app):
    client = app()
    page = client.get("/", headers={**BROWSER, "Sec-Fetch-Site": "cross-site"})
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert client.get("/page-main.js", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


# ----------------------------------------------------------------------------- Host allow-list


def test_the_host_allow_list_refuses_other_names(app):
    """DNS rebinding: a name the attacker points at this server is not in the list."""
    client = app(security={"allowed_hosts": ["api.example.com", "*.svc.cluster.local"]})
    assert predict(client, Host="api.example.com:9999").status_code == 200
    assert predict(client, Host="batchline.ns.svc.cluster.local").status_code == 200
    refused = predict(client, Host="rebind.evil.example:9999")
    assert refused.status_code == 400 and "security.allowed_hosts" in refused.get_json()["error"]["message"]
    assert predict(client).status_code == 400  # Host: localhost is not listed
    assert client.get("/", headers={**BROWSER, "Host": "rebind.evil.example"}).status_code == 400


def test_the_host_check_applies_with_a_token_too(app):
    client = app(auth_token=PREDICT, security={"allowed_hosts": ["api.example.com"]})
    assert predict(client, Host="evil.example", **bearer(PREDICT)).status_code == 400
    assert predict(client, Host="api.example.com", **bearer(PREDICT)).status_code == 200


# ----------------------------------------------------------------------------- health


@pytest.mark.parametrize("path", HEALTH)
def test_health_stays_open_through_every_check(app, path):
    client = app(auth_token=PREDICT, security={"allowed_hosts": ["api.example.com"]})
    headers = {"Host": "10.1.2.3:9999", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    assert client.get(path, headers=headers).status_code == 200
    assert app().get(path, headers=headers).status_code == 200
