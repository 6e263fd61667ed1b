"""The server's bearer token: config, then BATCHLINE_AUTH_TOKEN -- the variable
the client reads too; the old BATCHLINE_TOKEN is ignored."""

from __future__ import annotations

import pytest

from serving.service.auth import (
    ADMIN_TOKEN_ENV,
    OPEN_PATHS,
    TOKEN_ENV,
    admin_token,
    auth_token,
    challenge,
    required_token,
    token_accepts,
)

OLD_TOKEN_ENV = "BATCHLINE_TOKEN"  # the deprecated name, now removed: the server must not read it


def test_config_wins_then_the_documented_variable():
    env = {TOKEN_ENV: "from-env", OLD_TOKEN_ENV: "old"}
    assert auth_token("from-config", env) == "from-config"
    assert auth_token(None, env) == "from-env"
    assert auth_token(None, {}) is None
    assert auth_token("", {TOKEN_ENV: ""}) is None


def test_the_old_variable_is_ignored():
    """Its deprecation shim is gone: a server with only BATCHLINE_TOKEN set has no token."""
    assert auth_token(None, {OLD_TOKEN_ENV: "old"}) is None
    assert auth_token(None, {TOKEN_ENV: "", OLD_TOKEN_ENV: "old"}) is None


def test_bearer_header():
    assert token_accepts("Bearer s3cret", "s3cret")
    assert not token_accepts("Bearer wrong", "s3cret")
    assert not token_accepts("s3cret", "s3cret")
    assert not token_accepts("", "s3cret")


@pytest.mark.parametrize("header", ["bearer s3cret", "BEARER s3cret", "Bearer   s3cret ", "  bEaReR s3cret"])
def test_the_scheme_is_case_insensitive_and_spaces_are_tolerated(header):
    """Regression: only the exact prefix "Bearer " was accepted (RFC 7235: the scheme is case-insensitive)."""
    assert token_accepts(header, "s3cret")


@pytest.mark.parametrize("header", ["Basic s3cret", "Bearer", "Bearer ", "Bearers3cret", "Bearer s3cret x", "s3cret"])
def test_other_schemes_and_malformed_headers_are_refused(header):
    assert not token_accepts(header, "s3cret")


def test_the_admin_token_comes_from_the_config_then_its_own_variable():
    env = {ADMIN_TOKEN_ENV: "adm", TOKEN_ENV: "predict"}
    assert admin_token("conf", env) == "conf"
    assert admin_token(None, env) == "adm"
    assert admin_token(None, {TOKEN_ENV: "predict", OLD_TOKEN_ENV: "old"}) is None  # never the prediction token
    assert admin_token("", {ADMIN_TOKEN_ENV: ""}) is None


def test_which_token_a_path_needs():
    """One rule for the app and any front end that refuses before the body."""
    tokens = {"auth_token": "p", "admin_token": "a"}
    assert required_token("/ocr/prediction", **tokens) == "p"
    assert required_token("/admin/reload", **tokens) == "a"
    assert required_token("/admin/reload", auth_token="p", admin_token=None) is None  # refused by the app (403)
    assert all(required_token(path, **tokens) is None for path in OPEN_PATHS)
    assert "/health/ready" in OPEN_PATHS and "/v2/health/live" in OPEN_PATHS


def test_the_401_challenge_says_invalid_token_only_when_one_was_sent():
    assert challenge(None) == 'Bearer realm="batchline"'
    assert challenge("Basic abc") == 'Bearer realm="batchline"'
    assert challenge("bearer wrong") == 'Bearer realm="batchline", error="invalid_token"'
    assert "wrong" not in challenge("Bearer wrong")
