"""Faults injected on purpose in the real server's predictor processes (issue
15), with the fault-injection op (tests/support/fault_op.py) running in
``instance_mode: process`` under open-loop load (and one in ``device_process``):

* a predictor that hangs fails only the requests of its batch, with 504 at
  their deadline; the process is killed and replaced, and the rest flows;
* a leaking predictor under ``max_rss_mb`` is replaced gracefully again and
  again: no request fails and no predictor process grows without bound;
* predictor processes that kill themselves at a rate: every answer is 200,
  503 or 504, never a 500, and the instances come back;
* a pipeline loaded at run time (SIGHUP) is supervised like the others, and
  unloading it is no death: its processes and segments go, nothing restarts.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import requests

from tests.support.fault_op import fault_config
from tests.support.image_fakes import encode_png, make_image
from tests.support.reliability.kills import predictor_pids, restarts
from tests.support.reliability.known_good import paddle_body
from tests.support.reliability.load import offer
from tests.support.reliability.soak import find_problems, leak_overrides
from tests.support.reliability.soak import run as soak
from tests.support.server_process import ServerProcess
from tests.support.waiting import until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")]

PROCESS = {"instance_mode": "process"}
IMAGE = encode_png(make_image(48, 32, seed=1))


def serve(tmp_path, name: str = "img", **kwargs) -> ServerProcess:
    path = tmp_path / f"{name}.yml"
    path.write_text(fault_config(name=name, **kwargs))
    return ServerProcess(str(path), ready_timeout=120)


def post(url: str, image: bytes, name: str = "img", timeout: float = 60) -> int:
    return requests.post(f"{url}/{name}/prediction", data=paddle_body(image), timeout=timeout).status_code


def background(url: str, rate: float, duration_s: float, name: str = "img"):
    """Open-loop load on a thread; returns (thread, dict filled with the Outcomes when it ends)."""
    out: dict = {}

    def run():
        out["result"], out["outcomes"] = offer(
            url, name, IMAGE, rate, duration_s, max_in_flight=128, client_timeout_s=60
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_hanging_predictor_fails_only_its_batch_with_504_and_is_replaced(tmp_path):
    with serve(tmp_path, request_timeout_ms=3000, max_batch_size=4, instance_num=2, service=PROCESS) as server:
        thread, out = background(server.url, rate=20, duration_s=12)
        time.sleep(2)
        began = time.monotonic()
        status = post(server.url, encode_png(make_image(48, 32, seed=2, fault="hang")))
        took = time.monotonic() - began
        thread.join(60)
        assert status == 504 and 2.5 < took < 6.0, (status, took)
        assert until(lambda: restarts(server.url).get("stats") == 1, timeout=30), server.log()
        assert "gave no answer by its batch's deadline" in server.log()
        statuses = out["outcomes"].by_status()
        assert set(statuses) <= {200, 504}, statuses
        assert statuses.get(504, 0) <= 3, statuses  # the hung batch's mates at most
        assert requests.get(server.url + "/health/ready", timeout=10).status_code == 200
        assert post(server.url, IMAGE) == 200
        assert server.terminate() == 0


def test_a_leaking_predictor_under_max_rss_mb_is_replaced_and_no_request_fails():
    """A short leak soak (the full one: bench/soak.py --leak-mb 2 --max-rss-mb 300)."""
    s = soak(
        minutes=25 / 60,
        rate=30,
        warmup_s=5,
        max_rss_mb=200,
        fake_overrides=leak_overrides(2.0, 200),
        log=lambda m: None,
    )
    assert not find_problems(s, max_drift=0.10), (find_problems(s, 0.10), s)
    assert s["requests"] > 500 and s["recycles"] >= 2 and s["restarts"] == 0, s
    assert s["predictor_peak"] > 200 << 20  # it did leak past the limit before each replacement


def test_predictor_processes_that_kill_themselves_never_cause_a_500(tmp_path):
    with serve(
        tmp_path, request_timeout_ms=5000, params={"kill_rate": 0.02}, instance_num=2, service=PROCESS
    ) as server:
        thread, out = background(server.url, rate=30, duration_s=15)
        thread.join(90)
        statuses = out["outcomes"].by_status()
        assert set(statuses) <= {200, 503, 504}, statuses
        assert statuses.get(200, 0) >= 0.9 * sum(statuses.values()), statuses
        assert restarts(server.url).get("stats", 0) >= 2, server.log()
        assert "was killed by SIGKILL" in server.log()
        assert until(lambda: requests.get(server.url + "/health/ready", timeout=10).status_code == 200, timeout=30)
        assert server.terminate() == 0


def test_a_pipeline_loaded_at_run_time_is_supervised_and_unloading_it_is_no_death(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "alpha.yml").write_text(fault_config(name="alpha", service=PROCESS))
    with ServerProcess([str(conf)], ready_timeout=120) as server:
        (conf / "beta.yml").write_text(fault_config(name="beta", service=PROCESS))
        server.proc.send_signal(signal.SIGHUP)
        assert until(lambda: "SIGHUP reload done" in server.log(), timeout=60), server.log()
        assert post(server.url, IMAGE, "beta") == 200
        assert post(server.url, encode_png(make_image(48, 32, fault="kill_process")), "beta") == 503
        assert until(lambda: restarts(server.url).get("stats") == 1, timeout=30), server.log()
        assert until(lambda: post(server.url, IMAGE, "beta") == 200, timeout=30)

        before = set(predictor_pids(server.proc.pid, "stats"))
        assert len(before) == 2
        (conf / "beta.yml").unlink()
        server.proc.send_signal(signal.SIGHUP)
        assert until(lambda: server.log().count("SIGHUP reload done") == 2, timeout=60), server.log()
        assert until(lambda: len(predictor_pids(server.proc.pid, "stats")) == 1, timeout=30)
        assert post(server.url, IMAGE, "alpha") == 200
        time.sleep(1.0)  # a watcher that took the unload for a death would have counted it by now
        assert restarts(server.url).get("stats") == 1
        assert server.terminate() == 0
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"bl{server.proc.pid}_")]


def test_pipelines_in_one_device_process_share_it_across_reloads_and_come_back_together(tmp_path):
    """``instance_mode: device_process``: a pipeline loaded at run time joins the running
    device process; a predictor that kills itself there takes every instance in it, all come
    back together in one fresh process (never a 500); unloading a pipeline leaves the process
    serving the others, and nothing stays in /dev/shm."""
    device = {"instance_mode": "device_process"}
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "alpha.yml").write_text(fault_config(name="alpha", service=device))
    with ServerProcess([str(conf)], ready_timeout=120) as server:
        (host,) = predictor_pids(server.proc.pid, "cpu")
        (conf / "beta.yml").write_text(fault_config(name="beta", service=device))
        server.proc.send_signal(signal.SIGHUP)
        assert until(lambda: "SIGHUP reload done" in server.log(), timeout=60), server.log()
        assert predictor_pids(server.proc.pid, "cpu") == [host]  # joined, not a second process
        assert post(server.url, IMAGE, "alpha") == post(server.url, IMAGE, "beta") == 200

        assert post(server.url, encode_png(make_image(48, 32, fault="kill_process")), "beta") == 503
        assert until(lambda: restarts(server.url).get("stats") == 2, timeout=30), server.log()  # both instances
        assert until(lambda: post(server.url, IMAGE, "alpha") == post(server.url, IMAGE, "beta") == 200, timeout=30)
        (fresh,) = predictor_pids(server.proc.pid, "cpu")
        assert fresh != host

        (conf / "beta.yml").unlink()
        server.proc.send_signal(signal.SIGHUP)
        assert until(lambda: server.log().count("SIGHUP reload done") == 2, timeout=60), server.log()
        assert post(server.url, IMAGE, "alpha") == 200
        time.sleep(1.0)  # a watcher that took the unload for a death would have counted it by now
        assert restarts(server.url).get("stats") == 2 and predictor_pids(server.proc.pid, "cpu") == [fresh]
        assert server.terminate() == 0
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"bl{server.proc.pid}_")]
