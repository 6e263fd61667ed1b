"""Fixtures shared by the integration tests."""

import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """Linear(4, 3) + relu saved with a dynamic batch dim; returns (dir, W, b)."""
    pytest.importorskip("paddle")
    from tests.support.tiny_model import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny"))
