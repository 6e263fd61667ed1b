"""Device processes (``instance_mode: device_process``,
serving.runners.device_hosts) on a tiny real Paddle model, on the CPU as the
GPU path runs them: every instance of every op on one device is a thread of one
shared process; it outlives no instance, takes only the server's key, and its
death or hang restarts every instance in it together."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from multiprocessing.connection import Client

import numpy as np
import pytest

pytest.importorskip("paddle")

from serving.errors import DeadlineExceeded  # noqa: E402
from serving.runners.device_hosts import DeviceHosts, device_key  # noqa: E402
from serving.runners.process import ProcessPredictor  # noqa: E402
from serving.runners.process_supervisor import Supervisor  # noqa: E402
from tests.support.tiny_model import expected, make_conf  # noqa: E402
from tests.support.waiting import until  # noqa: E402

pytestmark = pytest.mark.slow  # device processes started, killed and restarted

X = np.ones((2, 4), np.float32)


def hosted(model_dir, hosts: DeviceHosts, **options) -> ProcessPredictor:
    return ProcessPredictor(make_conf(model_dir, instance_mode="device_process"), host=hosts, **options)


@contextlib.contextmanager
def two_instances(model_dir, **supervisor):
    """Two instances (as of two ops) in one device process; supervised if asked.
    Yields (hosts, [runners], the deaths the supervisors noticed)."""
    hosts = DeviceHosts()
    runners = [hosted(model_dir, hosts, label="det"), hosted(model_dir, hosts, label="rec")]
    deaths: list[str] = []
    supervisors = [Supervisor(f"op{i}", [r], on_death=deaths.append, **supervisor) for i, r in enumerate(runners)]
    for s in supervisors:
        s.start()
    try:
        yield hosts, runners, deaths
    finally:
        for s in supervisors:
            s.stop()
        for r in runners:
            r.close()


def test_the_instances_of_every_op_share_one_process_named_after_the_device(tiny_model):
    model_dir, weight, bias = tiny_model
    with two_instances(model_dir) as (hosts, (det, rec), _):
        assert det.pid == rec.pid and det.pid not in (None, os.getpid())
        assert hosts.pids() == {"cpu": det.pid}
        with open(f"/proc/{det.pid}/comm", encoding="utf-8") as f:
            assert f.read().strip() == "bl-cpu"
        threads = []
        for tid in os.listdir(f"/proc/{det.pid}/task"):
            with open(f"/proc/{det.pid}/task/{tid}/comm", encoding="utf-8") as f:
                threads.append(f.read().strip())
        assert {"bl-det", "bl-rec"} <= set(threads), threads  # each instance's thread, for top -H
        for n, runner in enumerate((det, rec), start=1):
            x = np.random.default_rng(n).random((n + 2, 4), dtype=np.float32)
            np.testing.assert_allclose(runner.run({"x": x})[0], expected(x, weight, bias), rtol=1e-5, atol=1e-6)


def run_together(runners: list[ProcessPredictor], weight, bias) -> None:
    """Each runner on a thread of its own, 40 batches of random sizes, each answer checked."""
    errors: list[BaseException] = []

    def hammer(runner: ProcessPredictor, seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(40):
                x = rng.random((int(rng.integers(1, 9)), 4), dtype=np.float32)
                np.testing.assert_allclose(runner.run({"x": x})[0], expected(x, weight, bias), rtol=1e-5, atol=1e-6)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(r, i)) for i, r in enumerate(runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]


def test_instances_run_at_the_same_time_each_with_its_own_answers(tiny_model):
    model_dir, weight, bias = tiny_model
    with two_instances(model_dir) as (_, runners, _):
        run_together(runners, weight, bias)


def test_the_process_ends_with_its_last_instance_and_leaves_no_segment(tiny_model):
    model_dir, _, _ = tiny_model
    hosts = DeviceHosts()
    first, second = hosted(model_dir, hosts), hosted(model_dir, hosts)
    process = first.child
    prefixes = [first.shm_prefix, second.shm_prefix]
    first.run({"x": X})
    second.run({"x": X})
    first.close()
    assert process.is_alive() and second.run({"x": X})[0].shape == (2, 3)  # the other one serves on
    assert second.pid == process.pid
    second.close()
    assert until(lambda: not process.is_alive(), 15) and process.exitcode == 0
    assert hosts.pids() == {}
    if os.path.isdir("/dev/shm"):
        assert not [n for n in os.listdir("/dev/shm") for p in prefixes if n.startswith(p)]
    third = hosted(model_dir, hosts)  # a later instance starts a fresh one
    try:
        assert third.pid not in (None, process.pid) and third.run({"x": X})[0].shape == (2, 3)
    finally:
        third.close()


def test_a_killed_device_process_restarts_every_instance_in_one_fresh_process(tiny_model):
    model_dir, _, _ = tiny_model
    warmed: list[object] = []
    with two_instances(model_dir, warm=lambda r: warmed.append(r.run({"x": X}))) as (hosts, runners, deaths):
        old = runners[0].pid
        os.kill(old, signal.SIGKILL)
        assert until(lambda: len(deaths) == 2), deaths
        assert deaths == ["was killed by SIGKILL"] * 2
        assert until(lambda: all(r.ready.is_set() and r.pid not in (None, old) for r in runners))
        assert runners[0].pid == runners[1].pid == hosts.pids()["cpu"]  # together again
        assert len(warmed) == 2 and not any(r.failed for r in runners)
        assert [r.run({"x": X})[0].shape for r in runners] == [(2, 3)] * 2


def test_a_hung_device_process_is_killed_at_the_deadline_and_both_instances_come_back(tiny_model):
    model_dir, _, _ = tiny_model
    with two_instances(model_dir) as (_, (det, rec), deaths):
        hung = det.pid
        os.kill(hung, signal.SIGSTOP)  # alive, never answers
        det.run_deadline = time.monotonic() + 0.3
        with pytest.raises(DeadlineExceeded, match="hung"):
            det.run({"x": X})
        assert until(lambda: all(r.ready.is_set() and r.pid not in (None, hung) for r in (det, rec)))
        assert det.pid == rec.pid
        assert "was killed by SIGKILL" in deaths
        det.run_deadline = rec.run_deadline = time.monotonic() + 30
        assert det.run({"x": X})[0].shape == rec.run({"x": X})[0].shape == (2, 3)


def test_an_instance_that_cannot_load_fails_alone(tiny_model):
    """A load that raises fails its instance only (one that crashes natively takes the
    process, as any crash there does: the kill tests above)."""
    import functools

    from tests.support.fault_op import FaultModel

    model_dir, _, _ = tiny_model
    hosts = DeviceHosts()
    good = hosted(model_dir, hosts)
    pid = good.pid
    try:
        with pytest.raises(RuntimeError, match="(?s)failed to load.*fail_rate"):
            hosted(None, hosts, factory=functools.partial(FaultModel, {"fail_rate": 5.0}))
        assert good.child.is_alive() and hosts.pids() == {"cpu": pid}  # the process was not ended
        assert good.run({"x": X})[0].shape == (2, 3) and good.pid == pid
    finally:
        good.close()
    assert hosts.pids() == {}


class _Opens:
    """Unpickling this creates ``path``: proof of whether anything unpickled it."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_caller_without_the_key_is_refused_and_the_process_serves_on(tiny_model, tmp_path):
    import pickle
    from multiprocessing import AuthenticationError

    model_dir, _, _ = tiny_model
    hosts = DeviceHosts()
    runner = hosted(model_dir, hosts)
    try:
        address = runner._child._host.address  # what another local user could find (the abstract namespace)
        with pytest.raises((AuthenticationError, EOFError, ConnectionError)):
            Client(address, "AF_UNIX", authkey=b"a guess")
        marker = tmp_path / "unpickled"
        raw = Client(address, "AF_UNIX")  # no handshake at all: straight to a pickle
        raw.send_bytes(pickle.dumps(_Opens(str(marker))))
        assert runner.run({"x": X})[0].shape == (2, 3)
        time.sleep(0.2)
        assert not marker.exists()
        raw.close()
        stalled = Client(address, "AF_UNIX")  # connects, never answers the challenge
        later = hosted(model_dir, hosts)  # an instance attaching meanwhile is not held up
        assert later.pid == runner.pid and later.run({"x": X})[0].shape == (2, 3)
        later.close()
        stalled.close()
    finally:
        runner.close()


def test_an_idle_cpu_instance_lowers_its_own_thread_only(tiny_model):
    model_dir, _, _ = tiny_model
    hosts = DeviceHosts()
    normal = hosted(model_dir, hosts)
    shadow = hosted(model_dir, hosts, idle_cpu=True)
    try:
        pid = normal.pid
        classes = [os.sched_getscheduler(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]
        assert os.SCHED_IDLE in classes  # the shadow instance's thread (and threads it started)
        assert os.sched_getscheduler(pid) != os.SCHED_IDLE  # the process's main thread is not
        assert normal.run({"x": X})[0].shape == shadow.run({"x": X})[0].shape == (2, 3)
    finally:
        normal.close()
        shadow.close()


def test_create_runners_puts_device_process_instances_in_the_hosts_given(tiny_model):
    from serving.runners.factory import create_runners

    model_dir, weight, bias = tiny_model
    hosts = DeviceHosts()
    conf = make_conf(model_dir, instance_mode="device_process")
    runners = create_runners(conf, 2, hosts=hosts) + create_runners(conf, 1, hosts=hosts)
    try:
        assert all(isinstance(r, ProcessPredictor) for r in runners)
        assert len({r.pid for r in runners}) == 1 and hosts.pids() == {"cpu": runners[0].pid}
        run_together(runners, weight, bias)  # the first two share their weights (Paddle clones)
    finally:
        for r in runners:
            r.close()
    assert hosts.pids() == {}


def test_the_device_key_names_a_gpu_by_its_id_and_every_cpu_instance_the_same():
    assert device_key(make_conf(None, device_type=1), 1) == "gpu1"
    assert device_key(make_conf(None, device_type=0), None) == "cpu"
