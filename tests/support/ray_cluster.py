"""A local Ray cluster of several nodes on this machine, for the Ray backend's
end-to-end tests and benchmark: a head (``ray start --head``) and more nodes
(``ray start --address``), each a raylet of its own with its own CPU count,
all under one temp dir of their own so their processes can be told apart
from any other Ray on the machine.

Processes are read from ``/proc`` (no psutil): every Ray daemon of the
cluster names the temp dir on its command line, and every worker (replica)
is a child of one of its raylets.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from serving.runners.pids import stat_fields
from tests.support.server_process import ROOT, ServerProcess, free_port

RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def _is_title(cmdline: str, title: str) -> bool:
    return cmdline == title or cmdline.startswith(title + ".")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    fields = stat_fields(pid)
    try:
        return int(fields[1]) if fields else 0
    except (ValueError, IndexError):
        return 0


def pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(roots: Sequence[int]) -> set[int]:
    """Every living process below ``roots``."""
    parent = {pid: _ppid(pid) for pid in pids()}
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        children = {pid for pid, pp in parent.items() if pp in frontier and pid not in found}
        found |= children
        frontier = children
    return found


class LocalRayCluster:
    def __init__(self, cpus_per_node: Sequence[int] = (2, 2)):
        self.cpus_per_node = list(cpus_per_node)
        # short: Ray's socket paths live under it (a Unix socket path has ~107 bytes)
        self.temp_dir = tempfile.mkdtemp(prefix="bl-ray-", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client_port = free_port()
        self.client_address = f"ray://127.0.0.1:{self.client_port}"  # Ray Client, as from another machine
        self.env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.env["RAY_USAGE_STATS_ENABLED"] = "0"
        # Ray turns token authentication on by itself once ~/.ray/auth_token exists (a plain
        # ray.init() writes one), and a driver then needs the same mode: say it, for both sides
        self.client_env = {"RAY_AUTH_MODE": "disabled"}
        self.env.update(self.client_env)
        self._raylets: list[int] = []

    def _ray(self, *args: str, timeout: float = 120.0) -> str:
        done = subprocess.run(
            [RAY, *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"ray {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self) -> LocalRayCluster:
        head, *others = self.cpus_per_node
        self._ray(
            "start",
            "--head",
            f"--port={self.port}",
            f"--num-cpus={head}",
            f"--temp-dir={self.temp_dir}",
            f"--ray-client-server-port={self.client_port}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        )
        for cpus in others:
            self._ray("start", f"--address={self.address}", f"--num-cpus={cpus}", "--disable-usage-stats")
        return self

    def daemons(self) -> list[int]:
        """This cluster's Ray daemons (GCS, raylets, ...): they name its temp dir on their command line."""
        return [pid for pid in pids() if self.temp_dir in _cmdline(pid) and pid != os.getpid()]

    def raylets(self) -> list[int]:
        return [pid for pid in self.daemons() if "/raylet/raylet" in _cmdline(pid).split(" ", 1)[0]]

    def processes(self) -> set[int]:
        """Every process of the cluster: its daemons and everything they started."""
        roots = self.daemons()
        return set(roots) | descendants(roots)

    def replicas(self, app: str, deployment: str) -> list[int]:
        """PIDs of a Serve deployment's replica actors.

        Ray titles them ``ray::ServeReplica:<app>:<name>``, and
        ``ray::ServeReplica:<app>:<name>.<method>()`` while a call runs (a
        health check, a metrics poll), so both forms count."""
        title = f"ray::ServeReplica:{app}:{deployment}"
        return sorted(pid for pid in self.processes() if _is_title(_cmdline(pid), title))

    def titles(self) -> list[str]:
        """The titles of the cluster's Ray workers, for an assertion message."""
        return sorted(t for t in (_cmdline(pid) for pid in self.processes()) if t.startswith("ray::"))

    def wait_replicas(self, app: str, deployment: str, count: int, timeout: float = 60.0) -> list[int]:
        """The deployment's replica PIDs once there are ``count`` of them (or whatever is there at the timeout)."""
        end = time.monotonic() + timeout
        found = self.replicas(app, deployment)
        while len(found) != count and time.monotonic() < end:
            time.sleep(0.5)
            found = self.replicas(app, deployment)
        return found

    def node_of(self, pid: int) -> int:
        """The raylet a worker process runs under."""
        raylets = set(self.raylets())
        while pid and pid not in raylets:
            pid = _ppid(pid)
        return pid

    def stop(self, timeout: float = 60.0) -> set[int]:
        """``ray stop`` (graceful, then forced); returns the cluster's processes still alive."""
        before = self.processes()
        subprocess.run([RAY, "stop"], env=self.env, capture_output=True, timeout=timeout, check=False)
        end = time.monotonic() + timeout
        while time.monotonic() < end and any(os.path.exists(f"/proc/{p}") for p in before):
            time.sleep(0.5)
        left = {p for p in before if os.path.exists(f"/proc/{p}") and _ppid(p) != 0}
        for pid in left:  # never leave them to the next test
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return left


def direct_address(server: ServerProcess, timeout: float = 60.0) -> str:
    """The ingress replica's own address (``ray.direct_ingress``), as ``batchline serve --ray`` logs
    it once the application runs."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(server.log_path, encoding="utf-8", errors="replace") as log:
            found = re.search(r"direct ingress: the ingress replicas also answer on (http://\S+?)/?[ ,]", log.read())
        if found:
            return found.group(1)
        time.sleep(0.5)
    raise AssertionError(f"no direct-ingress address logged:\n{server.log()}")
