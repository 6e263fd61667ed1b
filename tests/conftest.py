"""Shared pytest setup: make the checkout importable without installing it, and
give every test its tier from its folder.

Tiers (docs/testing.md):
* ``unit``: one module with fakes and an injectable clock; no model, no server,
  no child process; the whole tier runs in under a minute.
* ``integration``: real components together in this process or a child (the
  Flask app with fake ops, a predictor on the real models, a spawned runner).
* ``e2e``: a real server process, the bundled client, the real models.
* ``habits``: lint, format, types and import layers (tests/test_code_habits.py).

``slow`` is set by hand on tests that take more than a few seconds, in any tier,
so ``-m "not slow"`` is the loop between the unit tier and the full suite.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# test data, never tests: a Paddle Serving example's own test_pipeline_server.py is a user's script
collect_ignore_glob = ["data/*"]

TIER_BY_FOLDER = {
    ("tests", "unit"): "unit",
    ("tests", "integration"): "integration",
    ("tests", "e2e"): "e2e",
    ("bench", "tests"): "unit",
}
TIERS = (*sorted(set(TIER_BY_FOLDER.values())), "habits")


def tier_of(path: str) -> str:
    """The tier of a test file, by its folder under the checkout."""
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts == ["tests", "test_code_habits.py"]:
        return "habits"
    tier = TIER_BY_FOLDER.get(tuple(parts[:2]))
    if tier is None:
        raise pytest.UsageError(f"{path}: a test outside tests/unit, tests/integration, tests/e2e has no tier")
    return tier


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(str(item.path))
        for other in TIERS:
            if other != tier and item.get_closest_marker(other) is not None:
                raise pytest.UsageError(f"{item.nodeid}: marked {other} but its folder makes it {tier}")
        item.add_marker(tier)
