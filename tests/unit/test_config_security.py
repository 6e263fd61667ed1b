"""The config keys of access control: ``admin_token`` and ``security`` (server
keys, validated, errors naming the key) and secrets kept out of every message
and of ``batchline check``'s output."""

from __future__ import annotations

import pytest
import yaml

from serving import cli
from serving.config import ConfigError, load_repository, parse_config
from serving.config.file_set import SERVER_KEYS
from tests.support.engine_fakes import op_conf

SECRET = "s3cr3t-4dm1n-v4lue"


def config(**top) -> dict:
    return {"name": "echo", "op": {"echo": op_conf("EchoTextOp")}, **top}


def error_of(**top) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(config(**top))
    return str(info.value)


def write(tmp_path, name: str, **top) -> str:
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump({**config(**top), "name": name}))
    return str(path)


def test_defaults_and_canonical_entries():
    conf = parse_config(config())
    assert conf.admin_token is None
    assert (conf.security.insecure, conf.security.allowed_origins, conf.security.allowed_hosts) == (False, [], [])
    conf = parse_config(
        config(security={"allowed_origins": ["HTTPS://App.Example.com"], "allowed_hosts": ["API.example.com", "*.svc"]})
    )
    assert conf.security.allowed_origins == ["https://app.example.com:443"]
    assert conf.security.allowed_hosts == ["api.example.com", "*.svc"]
    assert parse_config(config(security=None)).security.insecure is False


@pytest.mark.parametrize(
    ("security", "key", "words"),
    [
        ({"insecur": True}, "security.insecur", "did you mean 'insecure'"),
        ({"insecure": "yes"}, "security.insecure", "must be true or false"),
        ({"allowed_origins": ["https://a.example/app"]}, "security.allowed_origins.0", "scheme://host[:port]"),
        ({"allowed_origins": ["a.example"]}, "security.allowed_origins.0", "scheme://host[:port]"),
        ({"allowed_origins": "https://a.example"}, "security.allowed_origins", "must be a list"),
        ({"allowed_hosts": ["ok.example", "a.example:8080"]}, "security.allowed_hosts.1", "no port"),
    ],
)
def test_invalid_security_names_the_key(security, key, words):
    message = error_of(security=security)
    assert f"{key}: " in message and words in message, message


@pytest.mark.parametrize("key", ["auth_token", "admin_token"])
@pytest.mark.parametrize("value", [123456789, ["s3cr3t"]])
def test_an_invalid_token_is_not_shown(key, value):
    """Regression: a token YAML read as a number was echoed: "auth_token: must be a string, got 123456789"."""
    message = error_of(**{key: value})
    assert f"{key}: must be a string" in message
    assert "123456789" not in message and "s3cr3t" not in message


def test_admin_token_and_security_are_server_keys(tmp_path):
    assert {"admin_token", "security"} <= set(SERVER_KEYS)
    a = write(tmp_path, "one", admin_token=SECRET, security={"allowed_hosts": ["a.example"]})
    b = write(tmp_path, "two", admin_token=SECRET + "-other", security={"allowed_hosts": ["b.example"]})
    with pytest.raises(ConfigError) as info:
        load_repository([a, b])
    message = str(info.value)
    assert f"{b}: admin_token: differs from the admin_token in {a} (one server checks one admin token)" in message
    assert f"{b}: security: " in message and "one server has one access policy" in message
    assert SECRET not in message
    c = write(tmp_path, "three")  # not set: no conflict, the other file's values apply
    repo = load_repository([a, c])
    assert repo.admin_token == SECRET and repo.security.allowed_hosts == ["a.example"]


def test_batchline_check_shows_no_token(tmp_path, capsys):
    good = write(tmp_path, "good", auth_token=SECRET, admin_token=SECRET)
    assert cli.main(["check", good]) == 0
    bad = write(tmp_path, "bad", auth_token=SECRET, admin_token=987654321)
    assert cli.main(["check", bad]) == 2
    out = capsys.readouterr()
    assert "admin_token" in out.err
    assert SECRET not in out.out + out.err and "987654321" not in out.err
