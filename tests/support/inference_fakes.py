"""A repository for the Open Inference Protocol tests (tests/integration/test_v2_*.py):
the model-free pipelines of :mod:`tests.support.client_fakes` as models: ``ocr``
(images) and ``ernie`` in two versions (texts; typed outputs ``label`` and ``score``),
with gRPC on a free port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from serving.config import parse_config
from serving.config.file_set import RepositoryConfig, repository_from
from serving.op import Op
from tests.support.client_fakes import ocr_config, text_config
from tests.support.live_app import LiveApp


def v2_repository(*, auth_token: str | None = None, max_inputs: int = 4, hold_load: bool = False) -> RepositoryConfig:
    """``ocr`` v1, ``ernie`` v1 and v2 (routed requests reach v2, the highest); ``hold_load``:
    ernie's ops load only once released (:meth:`LiveApp.release_held`)."""
    text = text_config(max_inputs_per_request=max_inputs, auth_token=auth_token, hold_load=hold_load)
    configs: list[tuple[str, dict[str, Any]]] = [
        ("ocr.yml", ocr_config(max_inputs_per_request=max_inputs, auth_token=auth_token)),
        ("ernie1.yml", {**text, "version": 1}),
        ("ernie2.yml", {**text, "version": 2}),
    ]
    parsed = []
    for file, config in configs:
        config["rpc_port"] = 0
        parsed.append((file, parse_config(config, source=file)))
    return repository_from([file for file, _ in configs], parsed)


def label_op(live: LiveApp, version: int) -> Op:
    """The live ``cls`` op of ``ernie`` at ``version`` (to release a held batch)."""
    return live.repository.pipeline("ernie", version).stages["cls"].op


@contextmanager
def v2_server() -> Iterator[LiveApp]:
    """:func:`v2_repository` served; every held batch released before it drains."""
    with LiveApp(v2_repository()) as app:
        try:
            yield app
        finally:
            app.release_held()


def recorded_submissions(live: LiveApp, monkeypatch: Any) -> list[tuple[int, int | None]]:
    """(priority, timeout_ms) of every submission ``live``'s repository takes from now on."""
    seen: list[tuple[int, int | None]] = []
    submit = live.repository.submit

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append((kwargs["priority"], kwargs["timeout_ms"]))
        return submit(*args, **kwargs)

    monkeypatch.setattr(live.repository, "submit", recording)
    return seen
