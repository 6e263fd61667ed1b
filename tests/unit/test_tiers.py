"""Test tiers: a test's folder gives its tier, and the unit tier refuses what
belongs in integration (a model, a child process)."""

import multiprocessing
import os

import pytest

from serving.config import LocalServiceConf
from serving.config.engines import ENGINE_NAMES
from serving.runners.runner_modules import load_in_process, load_one
from tests.conftest import ROOT, tier_of
from tests.unit.conftest import UnitTierViolation


@pytest.mark.parametrize(
    ("path", "tier"),
    [
        ("tests/unit/test_batcher.py", "unit"),
        ("tests/integration/test_http_api.py", "integration"),
        ("tests/e2e/test_ocr_server.py", "e2e"),
        ("bench/tests/test_multi.py", "unit"),
        ("tests/test_code_habits.py", "habits"),
    ],
)
def test_the_folder_gives_the_tier(path, tier):
    assert tier_of(os.path.join(ROOT, path)) == tier


def test_a_test_outside_the_tier_folders_is_an_error():
    with pytest.raises(pytest.UsageError, match="has no tier"):
        tier_of(os.path.join(ROOT, "tests", "support", "test_stray.py"))


def test_this_test_is_in_the_unit_tier(request):
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("integration") is None


def test_a_unit_test_cannot_start_a_child_process():
    with pytest.raises(UnitTierViolation, match="child process"):
        multiprocessing.get_context("spawn").Process(target=print).start()


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_a_unit_test_cannot_load_a_model(engine, tmp_path):
    for name in ("inference.json", "inference.onnx", "inference.pdiparams"):  # the config accepts the folder
        (tmp_path / name).write_bytes(b"")
    conf = LocalServiceConf(model_config=str(tmp_path), engine=engine)
    with pytest.raises(UnitTierViolation, match="loaded a model"):
        load_one(conf)
    with pytest.raises(UnitTierViolation, match="loaded a model"):
        load_in_process(conf, 2)
