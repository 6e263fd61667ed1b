"""docs/CONFIG.md's key tables are the schema's (serving.config.reference)."""

import os

import pytest

from serving.config import reference
from serving.config.engines import ENGINE_NAMES
from serving.config.reference import MODEL_BLOCKS, block_text, main, marker, rewrite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_MD = os.path.join(ROOT, "docs", "CONFIG.md")


def test_config_md_tables_are_what_the_schema_generates():
    with open(CONFIG_MD, encoding="utf-8") as f:
        text = f.read()
    assert rewrite(text) == text, "docs/CONFIG.md differs from the schema: run python -m serving.config.reference"


def test_every_field_of_every_block_has_a_description():
    for block in MODEL_BLOCKS:
        block_text(block)  # raises naming the field that has none


def test_a_table_shows_type_bounds_default_and_unit():
    rows = block_text("dag").splitlines()
    assert rows[0] == "| key | type | default | description |"
    assert "| `request_timeout_ms` | int ≥ 1 | 30000 | Request deadline (ms;" in "\n".join(rows)
    text = block_text("op.<name>.local_service_conf")
    choices = " \\| ".join(f"`{name}`" for name in ENGINE_NAMES)
    assert f"| `engine` | {choices} | `paddle` |" in text
    assert "| `max_batch_units` | int ≥ 1 or null | null |" in text
    assert "| `class` | str | required |" in block_text("op.<name>")  # the YAML spelling; `name` is hidden
    assert "`name`" not in block_text("op.<name>")


def _doc(blocks, body="stale\n"):
    return "".join(f"# {b}\n{marker(b)}{body}<!-- end generated -->\n" for b in blocks)


def test_rewrite_fills_regions_in_place_and_keeps_the_prose():
    blocks = [*reference.MODEL_BLOCKS, *reference.OTHER_BLOCKS]
    fresh = rewrite("intro\n" + _doc(blocks) + "outro\n")
    assert fresh.startswith("intro\n# top\n") and fresh.endswith("<!-- end generated -->\noutro\n")
    assert "stale" not in fresh and rewrite(fresh) == fresh


@pytest.mark.parametrize(
    "text, message",
    [
        (_doc(["http"]), "missing"),
        (_doc([*reference.MODEL_BLOCKS, *reference.OTHER_BLOCKS, "http"]), "repeated \\['http'\\]"),
        (_doc(["nope"]), "unknown block 'nope'"),
        (marker("http") + "no end\n", "has no"),
    ],
)
def test_rewrite_refuses_a_broken_file(text, message):
    with pytest.raises(ValueError, match=message):
        rewrite(text)


def test_check_exits_1_on_drift_and_the_command_fixes_it(tmp_path):
    blocks = [*reference.MODEL_BLOCKS, *reference.OTHER_BLOCKS]
    path = tmp_path / "CONFIG.md"
    path.write_text(_doc(blocks), encoding="utf-8")
    assert main(["--check", str(path)]) == 1
    assert "stale" in path.read_text(encoding="utf-8")
    assert main([str(path)]) == 0
    assert main(["--check", str(path)]) == 0
    path.write_text("no regions\n", encoding="utf-8")
    assert main(["--check", str(path)]) == 2
