"""The bench as a set of modules: every script runs as ``python -m bench.<name>``
from the repo root, none patches ``sys.path``, run_all.sh runs scripts that
exist, and no file in the repo gives a bench command in the old
``python bench/<name>.py`` form or names a retired script (those live on in
docs/DESIGN_NOTES.md, "Retired experiments", with the commit to check out)."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest

from bench.lib.lone_requests import lone_p50_ms
from bench.lib.paths import ROOT
from bench.lib.script import BenchError, chosen, first_line

BENCH = os.path.join(ROOT, "bench")
SCRIPTS = sorted(name[:-3] for name in os.listdir(BENCH) if name.endswith(".py") and not name.startswith("_"))
#: the one file allowed to name scripts that no longer exist: it says where to check them out
RETIRED_NOTES = "docs/DESIGN_NOTES.md"
TEXT_SUFFIXES = (".py", ".md", ".sh", ".yml", ".yaml", ".cfg", ".toml", ".txt", ".ini")
SKIPPED_DIRS = {"__pycache__", "build", "dist", "venv", "node_modules"}


def _repo_text_files() -> list[str]:
    """The checkout's text files: git's list (tracked and new, not ignored), or a walk that
    skips dot folders, caches and builds where the tree is not a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        )
        paths = out.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not (d.startswith(".") or d in SKIPPED_DIRS or d.endswith(".egg-info"))]
            paths += [os.path.relpath(os.path.join(folder, name), ROOT) for name in files]
    return [p for p in paths if p.endswith(TEXT_SUFFIXES) and os.path.isfile(os.path.join(ROOT, p))]


def test_no_bench_file_patches_sys_path():
    patched = []
    for folder, _, files in os.walk(BENCH):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if re.search(r"sys\.path\.(insert|append)\(", f.read()):
                        patched.append(os.path.relpath(path, ROOT))
    assert patched == []


def test_every_script_imports_as_a_module_and_has_a_main_guard():
    assert "revisions" in SCRIPTS and "simulate" in SCRIPTS
    for name in SCRIPTS:
        module = importlib.import_module(f"bench.{name}")
        with open(module.__file__, encoding="utf-8") as f:
            assert 'if __name__ == "__main__":' in f.read(), name


def test_the_scripts_a_gpu_host_may_get_as_files_run_as_their_module(tmp_path):
    """bench/gpu_check.py given to python by its path (bench/ on the path, not the checkout) re-runs itself as
    ``python -m bench.gpu_check``, from any folder; the others need ``-m``."""
    as_files = []
    for name in SCRIPTS:
        with open(os.path.join(BENCH, f"{name}.py"), encoding="utf-8") as f:
            if "from _as_module import rerun_as_module" in f.read():
                as_files.append(name)
    assert {"gpu_check", "gpu_probe", "torch_compile"} <= set(as_files)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for name in as_files:
        proc = subprocess.run(
            [sys.executable, os.path.join(BENCH, f"{name}.py"), "--help"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0 and "usage:" in proc.stdout, (name, proc.stderr[-2000:])


def test_run_all_runs_existing_scripts_with_dash_m():
    with open(os.path.join(BENCH, "run_all.sh"), encoding="utf-8") as f:
        text = f.read()
    assert not re.search(r"python3? \"?bench/", text)
    steps = re.search(r"^STEPS=\(([^)]*)\)", text, re.M)
    assert steps is not None
    for step in steps.group(1).split():
        assert step in SCRIPTS, step
        assert re.search(rf"^\s*{step}\)", text, re.M), f"run_all.sh has no case for {step}"


def test_repo_gives_bench_commands_in_the_module_form():
    old_form, missing = [], []
    for path in _repo_text_files():
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in set(re.findall(r"python3? bench/([a-z_]+)\.py", text)):
            if name in SCRIPTS:
                old_form.append(f"{path}: python bench/{name}.py -> python -m bench.{name}")
        if path != RETIRED_NOTES:
            named = re.findall(r"\bbench/([a-z_]+)\.py", text) + re.findall(
                r"(?:-m|from|import) bench\.([a-z_]+)", text
            )
            for name in set(named):
                if name not in SCRIPTS and not os.path.exists(os.path.join(BENCH, name)):
                    missing.append(f"{path}: bench/{name}.py is retired (docs/DESIGN_NOTES.md, Retired experiments)")
    assert old_form == [], "\n".join(old_form)
    assert missing == [], "\n".join(missing)


def test_lone_p50_ms_calls_each_target_alike_in_varying_order():
    seen: list[str] = []
    calls = {name: (lambda n=name: seen.append(n)) for name in ("a", "b", "c")}
    p50 = lone_p50_ms(calls, rounds=30, warmup=2, seed=1)
    assert set(p50) == {"a", "b", "c"} and all(ms >= 0 for ms in p50.values())
    assert all(seen.count(n) == 32 for n in "abc")
    rounds = {tuple(seen[6 + 3 * i : 9 + 3 * i]) for i in range(30)}
    assert len(rounds) > 1  # not a fixed rotation


def test_null_op_peers_are_scripts_and_those_of_this_environment_import():
    """bench/peers/null_*.py run in their own environments (bench/lib/venvs.py): each
    compiles and has a main guard here; the ones needing only the project's packages import."""
    peers = sorted(
        n[:-3] for n in os.listdir(os.path.join(BENCH, "peers")) if n.startswith("null_") and n.endswith(".py")
    )
    assert {"null_flask", "null_mosec", "null_pytriton", "null_rayserve", "null_litserve"} <= set(peers)
    for name in peers:
        path = os.path.join(BENCH, "peers", f"{name}.py")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        compile(text, path, "exec")
        assert 'if __name__ == "__main__":' in text, name
    for name in ("null_flask", "null_granian_app"):
        importlib.import_module(f"bench.peers.{name}")


def test_only_picks_known_names_in_their_order_and_names_the_unknown():
    known = ["bare", "batchline", "mosec"]
    assert chosen("", known) == known
    assert chosen("mosec,bare", known) == ["bare", "mosec"]
    with pytest.raises(BenchError, match=r"unknown \['triton'\]"):
        chosen("bare,triton", known)


def test_first_line_of_an_error_for_a_table_cell():
    assert first_line(BenchError("exited with 1\nTraceback ...")) == "exited with 1"
    assert first_line(BenchError("x" * 400)) == "x" * 300
    assert first_line(TimeoutError()) == "TimeoutError"
