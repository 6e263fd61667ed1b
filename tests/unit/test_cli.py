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
    assert set(cli.builtin_commands()) == {"check", "serve", "ray", "paddle-serving-path"}


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


# ---------------------------------------------------------------------------
# check: several files
# ---------------------------------------------------------------------------
FAKE = "tests.support.config_fakes:FakeOp"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _pipeline(path, head, ops="  det: {class: %s, share: true}\n  rec: {class: %s, input_ops: [det]}\n"):
    return _write(path, head + "op:\n" + ops % (FAKE, FAKE))


def test_check_of_several_files_prints_each_pipeline_its_routes_and_shares(tmp_path, capsys):
    routing = "routing:\n  weights: {1: 80, 2: 20}\n  key_header: X-User\n  shadow: {version: 3, sample: 0.5}\n"
    v1 = _pipeline(tmp_path / "ocr1.yml", "name: ocr\nhttp_port: 8080\n" + routing)
    v2 = _pipeline(tmp_path / "ocr2.yml", "name: ocr\nversion: 2\n")
    v3 = _pipeline(tmp_path / "ocr3.yml", "name: ocr\nversion: 3\n")
    other = _pipeline(tmp_path / "more" / "ocr_ernie.yml", "name: ocr_ernie\n")
    assert cli.main(["check", v1, v2, v3, str(tmp_path / "more")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:4] == [f"{v1}: OK", f"{v2}: OK", f"{v3}: OK", f"{other}: OK"]
    assert "server: http://127.0.0.1:8080, worker_num 16, max_queue_size 2048 (all pipelines)" in lines
    base = "http://127.0.0.1:8080"
    for block in (
        [
            f"pipeline 'ocr' version 1 ({v1})",
            f"  POST {base}/ocr/v1/prediction",
            f"  POST {base}/ocr/prediction (80% of requests)",
        ],
        [
            f"pipeline 'ocr' version 2 ({v2})",
            f"  POST {base}/ocr/v2/prediction",
            f"  POST {base}/ocr/prediction (20% of requests)",
        ],
        [
            f"pipeline 'ocr' version 3 ({v3})",
            f"  POST {base}/ocr/v3/prediction",
            f"  POST {base}/ocr/prediction (shadow: a copy of 50% of routed requests, answers not returned)",
        ],
        [
            f"pipeline 'ocr_ernie' version 1 ({other})",
            f"  POST {base}/ocr_ernie/v1/prediction",
            f"  POST {base}/ocr_ernie/prediction (default)",
        ],
    ):
        start = lines.index(block[0])
        assert lines[start : start + len(block)] == block
        assert lines[start + len(block) + 1].split()[:3] == ["op", "class", "inputs"]  # its op table
        assert lines[start + len(block) + 2].split()[:3] == ["det", FAKE, "(request)"]
    assert lines[lines.index("routes:") + 1 :] == [
        "  /ocr/prediction -> v1 80%, v2 20% (sticky per X-User header, else logid); "
        "shadow v3 gets 50%, at most 4 in flight",
        "  /ocr_ernie/prediction -> v1",
        "",
        "shared ops:",
        "  det: ocr v1 op det, ocr v2 op det, ocr v3 op det, ocr_ernie v1 op det (one stage, built from the first)",
    ]
    assert "dag order" not in out


def test_check_of_a_directory_uses_the_repository_form(tmp_path, capsys):
    path = _pipeline(tmp_path / "conf" / "ocr.yml", "name: ocr\n")
    assert cli.main(["check", str(tmp_path / "conf")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: OK" and "routes:" in lines and "shared ops:" in lines


def test_check_of_one_file_with_a_version_names_both_urls(tmp_path, capsys):
    path = _pipeline(tmp_path / "ocr.yml", "name: ocr\nversion: 2\n")
    assert cli.main(["check", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        f"{path}: OK",
        "pipeline 'ocr': POST http://127.0.0.1:9999/ocr/prediction",
        "pipeline 'ocr' version 2: POST http://127.0.0.1:9999/ocr/v2/prediction",
    ]
    assert "dag order: det -> rec" in lines


def test_check_of_several_files_reports_every_problem_and_exits_2(tmp_path, capsys):
    a = _pipeline(tmp_path / "a.yml", "name: ocr\nhttp_port: 8080\n")
    b = _pipeline(tmp_path / "b.yml", "name: ocr\nhttp_port: 9090\n")
    broken = _write(tmp_path / "c.yml", f"op: {{x: {{class: {FAKE}, retry: -1}}}}\n")
    assert cli.main(["check", a, b, broken]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"{broken}: op.x.retry: must be >= 0, got -1"]  # each file valid first
    assert cli.main(["check", a, b]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{b}: name: pipeline 'ocr' version 1 is already defined in {a}",
        f"{b}: http_port: 9090 conflicts with 8080 in {a} (one server listens on one port)",
    ]


@pytest.mark.parametrize(
    ("argv", "ours", "theirs"),
    [
        (["serve", "web_service.py"], ["serve", "web_service.py"], []),
        (
            ["serve", "ws.py", "--host", "127.0.0.1", "--port", "9", "-c", "config.yml", "-o", "a=b"],
            ["serve", "ws.py", "--host", "127.0.0.1", "--port", "9"],
            ["-c", "config.yml", "-o", "a=b"],
        ),
        (
            ["--log-level", "DEBUG", "serve", "--port", "5", "ws.py", "--model_dir", "m", "--no-warmup"],
            ["--log-level", "DEBUG", "serve", "--port", "5", "ws.py", "--no-warmup"],
            ["--model_dir", "m"],
        ),
        (["serve", "ws.py", "--", "--port", "7"], ["serve", "ws.py"], ["--port", "7"]),
        (["serve", "ws.py", "--port=4", "x", "-h"], ["serve", "ws.py", "--port=4"], ["x", "-h"]),
        (["serve", "a.yml", "--port", "3"], ["serve", "a.yml", "--port", "3"], []),
    ],
)
def test_a_paddle_serving_scripts_own_arguments_follow_it(argv, ours, theirs):
    from serving.commands.serve import split_argv

    assert split_argv(argv) == (ours, theirs)
