"""setup.cfg's floors stay at or above the known-fixed versions in deploy/known_fixed.txt:
a floor lowered (or dropped) below the release that fixed an advisory fails here."""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
SETUP_CFG = ROOT / "setup.cfg"
TABLE = ROOT / "deploy" / "known_fixed.txt"

ADVISORY = re.compile(r"\b(CVE-\d{4}-\d{4,}|GHSA(?:-[23456789cfghjmpqrvwx]{4}){3}|PYSEC-\d{4}-\d+)\b")
LOWER_BOUNDS = {">=", "==", "~=", "===", ">"}

Key = tuple[str, str]  # (canonical name, marker): what a table line holds to a floor


@dataclass(frozen=True)
class KnownFixed:
    requirement: Requirement
    advisories: tuple[str, ...]
    line: int

    @property
    def key(self) -> Key:
        return key_of(self.requirement)

    @property
    def minimum(self) -> Version:
        (spec,) = self.requirement.specifier
        return Version(spec.version)


def key_of(requirement: Requirement) -> Key:
    return canonicalize_name(requirement.name), str(requirement.marker or "")


def floor_of(requirement: Requirement) -> Version | None:
    """The lowest version ``requirement`` admits, as far as its lower bounds say (None: no bound)."""
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in LOWER_BOUNDS]
    return max(bounds, default=None)


def parse_table(text: str) -> list[KnownFixed]:
    """deploy/known_fixed.txt: ``requirement  # advisories and why`` a line (pip's constraints format)."""
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, hash_, why = line.partition(" #")
        if not hash_:
            raise ValueError(f"line {number}: no `# advisories` after the requirement: {line!r}")
        try:
            requirement = Requirement(spec.strip())
        except InvalidRequirement as exc:
            raise ValueError(f"line {number}: {exc}") from None
        entries.append(KnownFixed(requirement, tuple(ADVISORY.findall(why)), number))
    return entries


def declared(cfg_text: str) -> dict[str, list[Requirement]]:
    """setup.cfg's install_requires and every extra's requirements, by where they are."""
    cfg = configparser.ConfigParser()
    cfg.read_string(cfg_text)
    sections = {"install_requires": cfg.get("options", "install_requires", fallback="")}
    sections.update({f"extra {name}": value for name, value in cfg.items("options.extras_require")})
    return {
        where: [
            Requirement(line.strip())
            for line in value.splitlines()
            if line.strip() and not line.strip().startswith("#")
        ]
        for where, value in sections.items()
    }


def floor_problems(cfg_text: str, table: list[KnownFixed]) -> list[str]:
    """Each requirement of a listed package below its known-fixed floor (or with a marker the
    table does not hold to one), and each table line that no requirement in install_requires matches."""
    known = {entry.key: entry for entry in table}
    names = {name for name, _ in known}
    problems, seen = [], set()
    for where, requirements in declared(cfg_text).items():
        for requirement in requirements:
            key = key_of(requirement)
            if key[0] not in names:
                continue
            entry = known.get(key)
            if entry is None:
                problems.append(f"{where}: {requirement}: no line of {TABLE.name} for this marker")
                continue
            seen.add(key)
            floor = floor_of(requirement)
            if floor is None or floor < entry.minimum:
                problems.append(
                    f"{where}: {requirement} admits releases before {entry.minimum} ({', '.join(entry.advisories)})"
                )
    problems += [
        f"{TABLE.name} line {e.line}: {e.requirement} is in no requirement of setup.cfg"
        for e in table
        if e.key not in seen
    ]
    return problems


@pytest.fixture(scope="module")
def table() -> list[KnownFixed]:
    return parse_table(TABLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cfg_text() -> str:
    return SETUP_CFG.read_text(encoding="utf-8")


def test_setup_cfg_floors_are_at_least_the_known_fixed_releases(cfg_text, table):
    assert floor_problems(cfg_text, table) == []


def table_problems(table: list[KnownFixed]) -> list[str]:
    """What makes the table unusable: a package (and marker) twice, a line that is not one
    ``>=`` floor of a release, or one that names no advisory."""
    keys = [entry.key for entry in table]
    problems = [
        f"{name} {marker}: listed twice".strip() for name, marker in set(keys) if keys.count((name, marker)) > 1
    ]
    for entry in table:
        where = f"{TABLE.name} line {entry.line}"
        specs = list(entry.requirement.specifier)
        if [s.operator for s in specs] != [">="] or Version(specs[0].version).is_prerelease:
            problems.append(f"{where}: one `>=` floor of a release, nothing else")
        if entry.requirement.extras or entry.requirement.url:
            problems.append(f"{where}: a name and a version (pip refuses extras in constraints)")
        if not entry.advisories:
            problems.append(f"{where}: name the advisories (CVE-, GHSA- or PYSEC- ids) the floor fixes")
    return problems


def test_the_table_is_well_formed(table):
    assert table and table_problems(table) == []


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (("werkzeug>=3.0.6", "werkzeug"), "werkzeug admits releases before 3.0.6"),
        (("opencv-python>=4.8.1.78", "opencv-python==4.7.0.72"), "before 4.8.1.78"),
        (("ray[serve]>=2.54.0", "ray[serve]>=2.40"), "extra ray: ray[serve]>=2.40"),
        (('pillow>=12.3.0; python_version < "3.11"', 'pillow>=10.3.0; python_version < "3.11"'), "before 12.3.0"),
        (('pillow>=13.0.0; python_version >= "3.11"', 'pillow>=13.0.0; python_version >= "3.12"'), "for this marker"),
        (("    requests>=2.32.4\n", "\n"), "requests>=2.32.4 is in no requirement"),
    ],
)
def test_a_lowered_or_dropped_floor_is_found(cfg_text, table, change, found):
    old, new = change
    assert old in cfg_text, old
    problems = floor_problems(cfg_text.replace(old, new, 1), table)
    assert any(found in p for p in problems), problems


@pytest.mark.parametrize(
    "line",
    [
        "orjson>=3.11.6",  # no comment
        "orjson>=3.11.6  # faster",  # no advisory id
        "orjson<4  # CVE-2025-67221",  # not a floor
        "orjson>=3.11.6,<4  # CVE-2025-67221",  # more than a floor
        "orjson>=4.0rc1  # CVE-2025-67221",  # a pre-release
        "ray[serve]>=2.54.0  # CVE-2026-27482",  # extras
        "orjson>=3.11.6  # CVE-2025-67221\norjson>=3.11.7  # CVE-2025-67221",  # twice
        "orjson>>3  # CVE-2025-67221",  # not a requirement
    ],
)
def test_a_malformed_table_line_is_refused(line):
    try:
        problems = table_problems(parse_table(line))
    except ValueError:
        return
    assert problems
