"""The server's bearer token: config, then BATCHLINE_AUTH_TOKEN, then the old
BATCHLINE_TOKEN (accepted with a warning) -- the variable the client reads too."""

from __future__ import annotations

import logging

from serving.http.auth import OLD_TOKEN_ENV, TOKEN_ENV, auth_token, bearer_matches


def test_config_wins_then_the_documented_variable():
    env = {TOKEN_ENV: "from-env", OLD_TOKEN_ENV: "old"}
    assert auth_token("from-config", env) == "from-config"
    assert auth_token(None, env) == "from-env"
    assert auth_token(None, {}) is None
    assert auth_token("", {TOKEN_ENV: ""}) is None


def test_the_old_variable_still_works_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="serving.http.auth"):
        assert auth_token(None, {OLD_TOKEN_ENV: "old"}) == "old"
    assert f"{OLD_TOKEN_ENV} is deprecated: set {TOKEN_ENV}" in caplog.text


def test_bearer_header():
    assert bearer_matches("Bearer s3cret", "s3cret")
    assert not bearer_matches("Bearer wrong", "s3cret")
    assert not bearer_matches("s3cret", "s3cret")
    assert not bearer_matches("", "s3cret")
