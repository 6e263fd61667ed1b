"""The server a reliability run drives: one started here (a fake-op image
config, or a config file), or one already running at a URL."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests

from tests.support.image_fakes import image_config
from tests.support.reliability.known_good import valid_image
from tests.support.server_process import ServerProcess

FAKE = "fake"  # --config value meaning: write and use a fake-op image config


def fake_config_file(**kwargs: Any) -> str:
    """Write an ImageStatsOp config to a temp file; return its path."""
    fd, path = tempfile.mkstemp(prefix="batchline-fake-", suffix=".yml")
    with os.fdopen(fd, "w") as f:
        f.write(image_config(**kwargs))
    return path


def start_server(
    config: str, *, ready_timeout: float = 300.0, env: dict | None = None, **fake_kwargs: Any
) -> ServerProcess:
    """``config`` is a path, or :data:`FAKE` for a fake-op image config built from ``fake_kwargs``."""
    path = fake_config_file(**fake_kwargs) if config == FAKE else config
    return ServerProcess(path, ready_timeout=ready_timeout, env=env)


def pipeline_info(url: str) -> tuple[str, str]:
    """(pipeline name, input kind) of the server at ``url`` (probes GET /{name}/config via a 404 message)."""
    r = requests.post(url + "/__probe__/prediction", data=b"{}", timeout=10)
    msg = r.json().get("err_msg", "")
    name = msg.rsplit("this server runs ", 1)[-1].strip("'\"") if "this server runs" in msg else "ocr"
    kind = requests.get(f"{url}/{name}/config", timeout=10).json().get("input", "image")
    return name, kind


@dataclass
class Target:
    """The server a load run drives: ``url``, its ``pid`` (None if external),
    pipeline ``name``, a valid ``image`` and the fake-op settings used."""

    url: str
    pid: int | None
    name: str
    image: bytes
    fake: dict
    started: bool

    def capacity_concurrency(self, config: str) -> int:
        """Closed-loop clients that saturate the server when measuring capacity."""
        return 2 * self.fake["max_batch_size"] * self.fake["instance_num"] if config == FAKE else 16


@contextmanager
def load_target(config: str, url: str | None, fake: dict, image_path: str | None) -> Iterator[Target]:
    """Use the server at ``url``, or start ``config`` (FAKE: a fake-op config with
    ``fake``'s settings) for the duration of the block."""
    server = None
    try:
        if not url:
            server = start_server(config, **fake)
            url = server.url
        name, _ = pipeline_info(url)
        image, _ = valid_image(image_path)
        yield Target(url, server.proc.pid if server else None, name, image, fake, server is not None)
    finally:
        if server is not None:
            server.stop()
