"""Fixtures shared by the integration tests."""

from typing import Any

import pytest

from tests.support.client_fakes import ocr_config, text_config
from tests.support.live_app import LiveApp


def with_rpc(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with gRPC on a free port."""
    return {**config, "rpc_port": 0}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """Linear(4, 3) + relu saved with a dynamic batch dim; returns (dir, W, b)."""
    pytest.importorskip("paddle")
    from tests.support.tiny_model import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def live_app():
    """Start servers for one test: ``live_app(config, rpc=False, **LiveApp kwargs)``; ``rpc``
    adds gRPC on a free port (a config dict only). Afterwards every held op is released
    and each server drained."""
    started: list[LiveApp] = []

    def start(config: Any, *, rpc: bool = False, **kwargs: Any) -> LiveApp:
        live = LiveApp(with_rpc(config) if rpc else config, **kwargs)
        started.append(live)
        return live

    yield start
    for live in started:
        live.release_held()
        live.close()


@pytest.fixture(scope="module")
def ocr():
    """The model-free OCR-shaped pipeline (tests/support/client_fakes.py), on HTTP and gRPC."""
    with LiveApp(with_rpc(ocr_config())) as live:
        yield live


@pytest.fixture(scope="module")
def ernie():
    """The model-free text-shaped pipeline, on HTTP and gRPC."""
    with LiveApp(with_rpc(text_config())) as live:
        yield live
