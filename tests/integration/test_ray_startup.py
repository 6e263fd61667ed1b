"""``batchline serve --ray`` around its local cluster, without starting one:
a config whose CPUs cannot fit the machine is refused at once by the command
itself (exit 2, the need, the supply and the keys to change; no Ray process
started), and the processes a stopping command started are reaped
(:mod:`serving.rayserve.own_processes`: what outlives Ray's own shutdown is
killed, a pid the system reused is left alone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import yaml

from serving.rayserve import own_processes
from tests.support.ray_cluster import descendants
from tests.support.server_process import ROOT


def test_a_config_that_cannot_fit_is_refused_before_ray_starts(tmp_path):
    with open(os.path.join(ROOT, "configs", "ocr.yml"), encoding="utf-8") as f:
        data = yaml.safe_load(f)
    # more CPUs than any machine this runs on: refused whatever its size
    data["op"]["rec"]["ray"] = {"num_replicas": 2, "ray_actor_options": {"num_cpus": 4096}}
    path = tmp_path / "ocr.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), RAY_ADDRESS="")
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.cli", "serve", str(path), "--ray", "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # on a failure, its whole group (a cluster it started) is killed
    )
    try:
        out, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"not refused at once:\n{out.decode(errors='replace')[-3000:]}") from None
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 2, text
    assert "ask for 8195 CPUs (8192 of them set in the configs)" in text, text
    assert "this machine gives Ray" in text
    assert "op.rec.ray.ray_actor_options.num_cpus" in text and "op.rec.ray.num_replicas" in text
    assert "Started a local Ray instance" not in text and "Traceback" not in text


def test_processes_that_outlive_the_shutdown_are_killed():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        found = own_processes.descendants()
        assert child.pid in found and os.getpid() not in found
        began = time.monotonic()
        assert own_processes.reap({child.pid: found[child.pid]}, grace_s=0.2) == [child.pid]
        assert child.wait(10) == -signal.SIGKILL
        assert time.monotonic() - began < 10
        assert child.pid not in descendants([os.getpid()])
    finally:
        if child.poll() is None:
            child.kill()


def test_a_reused_pid_is_left_alone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # the pid as recorded before: another start time, so another process
        assert own_processes.alive({child.pid: "1"}) == []
        assert own_processes.reap({child.pid: "1"}, grace_s=0) == []
        assert child.poll() is None
    finally:
        child.kill()
        child.wait(10)
