"""The client's bearer token: ``--token``, else ``$BATCHLINE_AUTH_TOKEN`` (the
variable the server reads); the old ``$BATCHLINE_TOKEN`` is ignored.
End to end (a server with ``auth_token``): tests/integration/test_client.py."""

import pytest

from client import bench as bench_cmd
from client import cli as predict_cmd
from client.cli import resolve_token


def resolve(given, environ):
    return resolve_token(given, environ)


def test_the_option_wins_over_both_variables():
    env = {"BATCHLINE_AUTH_TOKEN": "new", "BATCHLINE_TOKEN": "old"}
    assert resolve("given", env) == "given"
    assert resolve("", env) == ""  # an explicit empty --token sends none


def test_the_server_variable_is_read():
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "new", "BATCHLINE_TOKEN": "old"}) == "new"
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "new"}) == "new"


def test_the_old_variable_is_ignored():
    """Its deprecation shim is gone: only the variable the server reads counts."""
    assert resolve(None, {"BATCHLINE_TOKEN": "old"}) is None
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "", "BATCHLINE_TOKEN": "old"}) is None  # empty = unset


def test_no_token_anywhere():
    assert resolve(None, {}) is None


def test_os_environ_is_the_default(monkeypatch):
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", "from-env")
    assert resolve_token(None) == "from-env"


@pytest.mark.parametrize("command", [predict_cmd, bench_cmd])
def test_both_commands_read_the_variable_when_run_not_when_parsed(command, monkeypatch):
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", "from-env")
    parser = command.build_parser()
    args = parser.parse_args(["--url", "http://127.0.0.1:1"])
    assert args.token is None  # resolved by main(), from the environment it runs in
    assert "BATCHLINE_AUTH_TOKEN" in parser.format_help() and "BATCHLINE_TOKEN" not in parser.format_help()
