"""The ``batchline`` console script: built-in commands, commands plugged in
through entry points, and what happens when one cannot be loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from serving import cli


def test_the_client_commands_come_from_entry_points_not_imports():
    plugins = cli.plugin_commands()
    assert {"predict", "bench"} <= set(plugins), "reinstall batchline (pip install -e .) to register them"
    assert set(cli.builtin_commands()) == {"check", "serve"}


def test_a_plugin_that_cannot_load_is_reported_not_fatal(monkeypatch, capsys):
    def broken():
        raise ImportError("no module named 'no_such_module_xyz'")

    monkeypatch.setattr(cli, "plugin_commands", lambda: {"predict": broken})
    assert cli.main(["predict", "x.png"]) == 1
    assert "batchline predict: not available: ImportError" in capsys.readouterr().err


def test_an_unknown_command_says_how_commands_are_registered(capsys):
    assert cli.main(["predcit"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'predcit'" in err and "pip install -e ." in err


def test_help_lists_every_command():
    out = subprocess.run([sys.executable, "-m", "serving.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for command in ("check", "serve", "predict", "bench"):
        assert command in out.stdout


def test_serve_and_check_never_import_the_client(tmp_path):
    code = (
        "import sys; from serving.cli import build_parser; build_parser(['serve']); build_parser(['check']); "
        "sys.exit(3 if any(m == 'client' or m.startswith('client.') for m in sys.modules) else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("argv, chosen", [(["--log-level", "DEBUG", "serve", "x"], "serve"), (["-h"], None)])
def test_chosen_command(argv, chosen):
    assert cli._chosen_command(argv) == chosen
