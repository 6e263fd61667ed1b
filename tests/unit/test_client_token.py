"""The client's bearer token: ``--token``, else ``$BATCHLINE_AUTH_TOKEN`` (the
variable the server reads), else the old ``$BATCHLINE_TOKEN`` with a notice.
End to end (a server with ``auth_token``): tests/integration/test_client.py."""

import io

import pytest

from client import bench as bench_cmd
from client import cli as predict_cmd
from client.cli import resolve_token


def resolve(given, environ):
    err = io.StringIO()
    return resolve_token(given, err, environ), err.getvalue()


def test_the_option_wins_over_both_variables():
    env = {"BATCHLINE_AUTH_TOKEN": "new", "BATCHLINE_TOKEN": "old"}
    assert resolve("given", env) == ("given", "")
    assert resolve("", env) == ("", "")  # an explicit empty --token sends none


def test_the_server_variable_wins_over_the_old_one_silently():
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "new", "BATCHLINE_TOKEN": "old"}) == ("new", "")
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "new"}) == ("new", "")


def test_the_old_variable_still_works_with_a_notice():
    token, notice = resolve(None, {"BATCHLINE_TOKEN": "old"})
    assert token == "old"
    assert notice.startswith("notice: ") and "$BATCHLINE_TOKEN is deprecated" in notice
    assert "$BATCHLINE_AUTH_TOKEN" in notice and notice.count("\n") == 1
    assert resolve(None, {"BATCHLINE_AUTH_TOKEN": "", "BATCHLINE_TOKEN": "old"})[0] == "old"  # empty = unset


def test_no_token_anywhere():
    assert resolve(None, {}) == (None, "")


def test_os_environ_is_the_default(monkeypatch):
    monkeypatch.delenv("BATCHLINE_TOKEN", raising=False)
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", "from-env")
    assert resolve_token(None, io.StringIO()) == "from-env"


@pytest.mark.parametrize("command", [predict_cmd, bench_cmd])
def test_both_commands_read_the_variable_when_run_not_when_parsed(command, monkeypatch):
    monkeypatch.setenv("BATCHLINE_TOKEN", "old")
    parser = command.build_parser()
    args = parser.parse_args(["--url", "http://127.0.0.1:1"])
    assert args.token is None  # resolved by main(), so the notice is shown only when the token is used
    assert "BATCHLINE_AUTH_TOKEN" in parser.format_help()
