"""The commands, links and configs the README and docs/ give a reader work as written:

* every ``batchline ...`` / ``python -m serving.cli ...`` line of a fenced shell block
  parses with batchline's own argument parser (nothing is run);
* every ``python -m <module>`` names a module that exists, and ``python -m pytest -m X``
  names markers that setup.cfg declares;
* every relative link (and its ``#anchor``) points at a file (and heading) that exists;
* every ``configs/...yml`` named loads with the project's loader, and the README's
  config block is a valid config.

No model is loaded and no server started: the unit tier."""

from __future__ import annotations

import configparser
import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# the pages written for readers (the reports and design notes are checked for links only)
READER_PAGES = [
    README,
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "howto").glob("*.md")),
    *sorted((ROOT / "docs" / "reference").glob("*.md")),
]
ALL_MARKDOWN = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "deploy").rglob("*.md"))]
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
SEPARATORS = {"&&", "||", "|", ";"}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        fence = re.match(r"\s*```\s*([\w-]*)", line)
        if fence and language is None:
            language, body = fence.group(1), []
        elif fence:
            blocks.append((language, "\n".join(body) + "\n"))
            language = None
        elif language is not None:
            body.append(line)
    return blocks


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a document's fenced shell blocks, as argv lists
    (continuation lines joined, comments dropped, split at ``&&``, ``|``, ``;``)."""
    commands: list[list[str]] = []
    for block in [body for language, body in fenced_blocks(text) if language in SHELL_LANGUAGES]:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:  # not shell (a quoted answer, a YAML fragment)
                continue
            current: list[str] = []
            for token in [*tokens, ";"]:
                if token in SEPARATORS:
                    if current:
                        commands.append(current)
                    current = []
                else:
                    current.append(token)
    return commands


def inline_python_commands(text: str) -> list[list[str]]:
    """``python -m ...`` commands quoted inline (`...`) in running text."""
    return [shlex.split(span) for span in re.findall(r"`(python -m [^`]+)`", text)]


def batchline_argv(argv: list[str]) -> list[str] | None:
    """The arguments after ``batchline`` (or ``python -m serving.cli``), or None."""
    if argv[:1] == ["batchline"]:
        return argv[1:]
    if argv[:3] == ["python", "-m", "serving.cli"]:
        return argv[3:]
    return None


def test_shell_command_extraction():
    text = (
        "```bash\nIMG=$(base64 -w0 a.png)\npip install -e . && batchline serve  # comment\n"
        "batchline bench --url U \\\n    --duration 5\n```\n"
        "```yaml\nname: x\n```\n```\n$ batchline check a.yml\na.yml: OK\n```\n"
    )
    assert shell_commands(text) == [
        ["IMG=$(base64", "-w0", "a.png)"],
        ["pip", "install", "-e", "."],
        ["batchline", "serve"],
        ["batchline", "bench", "--url", "U", "--duration", "5"],
        ["batchline", "check", "a.yml"],
        ["a.yml:", "OK"],
    ]
    assert inline_python_commands('run `python -m pytest -m "not slow"` now') == [
        ["python", "-m", "pytest", "-m", "not slow"]
    ]


def _batchline_commands(pages: list[Path]) -> list[tuple[str, list[str]]]:
    found = []
    for page in pages:
        for argv in shell_commands(page.read_text(encoding="utf-8")):
            args = batchline_argv(argv)
            if args is not None:
                found.append((_rel(page), args))
    return found


@pytest.mark.parametrize("page", READER_PAGES, ids=_rel)
def test_batchline_commands_parse(page):
    """Every batchline command of the page's shell blocks is one the CLI accepts."""
    from serving.cli import build_parser

    for source, args in _batchline_commands([page]):
        try:
            build_parser(args).parse_args(args)
        except SystemExit as exc:  # argparse's way of refusing
            raise AssertionError(f"{source}: `batchline {' '.join(args)}` does not parse") from exc


def test_the_readme_shows_batchline_commands():
    commands = {args[0] for _, args in _batchline_commands([README])}
    assert {"serve", "predict", "check"} <= commands, commands


def _markers() -> set[str]:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    section = "tool:pytest" if parser.has_section("tool:pytest") else "pytest"
    lines = parser.get(section, "markers", fallback="").splitlines()
    return {line.split(":")[0].strip() for line in lines if line.strip()}


def _marker_names(expression: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", expression)) - {"and", "or", "not"}


@pytest.mark.parametrize("page", READER_PAGES, ids=_rel)
def test_python_m_commands_name_real_modules(page):
    text = page.read_text(encoding="utf-8")
    for argv in shell_commands(text) + inline_python_commands(text):
        if argv[:2] != ["python", "-m"] or len(argv) < 3 or "<" in argv[2]:
            continue  # not a module command, or a placeholder (bench.<name>)
        module = argv[2]
        assert importlib.util.find_spec(module) is not None, f"{_rel(page)}: no module {module!r}"
        if module == "pytest" and "-m" in argv[3:]:
            expression = argv[3:][argv[3:].index("-m") + 1]
            unknown = _marker_names(expression) - _markers()
            assert not unknown, f"{_rel(page)}: pytest markers not declared in setup.cfg: {unknown}"


# ---- links ---------------------------------------------------------------------------------
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        base = slug(heading)
        name, n = base, 1
        while name in found:  # GitHub numbers repeated headings
            name, n = f"{base}-{n}", n + 1
        found.add(name)
    return found


def test_slug_follows_github():
    assert (
        slug("Paddle Serving compatible: `POST /{name}/prediction`") == "paddle-serving-compatible-post-nameprediction"
    )
    assert slug("A/B weights") == "ab-weights"
    assert slug("2. The page") == "2-the-page"
    assert slug("Ray Serve: `ray:` blocks") == "ray-serve-ray-blocks"
    assert slug("A memory budget per batch (`max_batch_units`)") == "a-memory-budget-per-batch-max_batch_units"


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", ALL_MARKDOWN, ids=_rel)
def test_relative_links_resolve(page):
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link} (no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link} (no heading #{anchor} in {_rel(path)})")
    assert not broken, f"{_rel(page)}: broken links: {broken}"


# ---- configs -------------------------------------------------------------------------------
def _configs_named(pages: list[Path]) -> set[str]:
    named: set[str] = set()
    for page in pages:
        named |= set(re.findall(r"\bconfigs/(?:repository/)?[\w.-]+\.ya?ml\b", page.read_text(encoding="utf-8")))
        named |= set(re.findall(r"\bconfigs/repository/(?=[\s`)])", page.read_text(encoding="utf-8")))
    return named


def test_configs_named_in_the_docs_exist_and_load():
    from serving.config import load_repository

    named = _configs_named(READER_PAGES)
    assert "configs/ocr.yml" in named and "configs/repository/" in named
    for name in sorted(named):
        assert (ROOT / name).exists(), f"the docs name {name}, which does not exist"
        load_repository([str(ROOT / name)])


def test_readme_config_block_is_a_valid_config():
    from serving.config import parse_config

    blocks = [body for language, body in fenced_blocks(README.read_text(encoding="utf-8")) if language == "yaml"]
    assert len(blocks) == 1, "the README shows one config"
    config = parse_config(yaml.safe_load(blocks[0]), "README.md", str(ROOT / "rec_small.yml"))
    assert [op.name for op in config.ops] == ["rec"]
