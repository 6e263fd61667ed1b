"""Documents that quote the program's own output must quote it as it is."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _block_after(text: str, marker: str) -> str:
    start = text.index(marker) + len(marker)
    return text[start : text.index("```", start)]


def test_config_md_quotes_batchline_check_as_it_prints():
    marker = "$ batchline check configs/ocr.yml\n"
    quoted = _block_after((ROOT / "docs" / "CONFIG.md").read_text(encoding="utf-8"), marker)
    out = subprocess.run(
        [sys.executable, "-m", "serving.cli", "check", "configs/ocr.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    printed = re.sub(r"(?<=\s)/\S+/(\S+)", r"/.../\1", out.stdout)  # model paths differ per machine
    assert printed == quoted


def test_every_extra_named_in_an_install_hint_exists():
    """Regression: an error message told users to install 'batchline[ocr]', an extra that did not exist."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    extras = set(parser["options.extras_require"])
    named = set()
    for path in ROOT.glob("**/*"):
        if path.suffix not in {".py", ".md", ".cfg", ".yml", ".sh"} or ".git" in path.parts or path == Path(__file__):
            continue
        named |= set(re.findall(r"batchline\[([A-Za-z0-9_,-]+)\]", path.read_text(encoding="utf-8", errors="ignore")))
    unknown = {e for group in named for e in group.split(",")} - extras
    assert not unknown, f"install hints name extras that setup.cfg does not define: {sorted(unknown)}"


def test_readme_rollout_example_loads_as_written(tmp_path):
    """The README's complete example (three files of one repository) is a valid repository."""
    from serving.config import load_repository

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n# (ocr_v\d\.yml):[^\n]*\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in blocks] == ["ocr_v1.yml", "ocr_v2.yml", "ocr_v3.yml"]
    for name, body in blocks:
        (tmp_path / name).write_text(body, encoding="utf-8")
    repo = load_repository([str(tmp_path)])
    route = repo.routes["ocr"]
    assert (route.default, route.weights, route.shadow.version, route.shadow.sample) == (1, {1: 90, 2: 10}, 3, 0.5)
    assert [user for _, user in repo.shares["det"].users] == ["det", "det", "det"]
