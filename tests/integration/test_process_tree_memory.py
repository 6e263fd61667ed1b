"""serving.runners.process_memory over a process tree: a child, and a grandchild
the child started from another of its threads, count in its parent's tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from serving.runners.process_memory import children, process_tree, rss_bytes, tree_rss_bytes

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux /proc")
MB = 1 << 20

# holds 60 MB, then starts a grandchild holding 60 MB from a second thread and keeps that thread alive
CHILD = """
import subprocess, sys, threading, time
block = bytearray(b"\\1") * (60 << 20)
def start():
    subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(b'\\\\1') * (60 << 20); time.sleep(60)"])
    time.sleep(60)
threading.Thread(target=start, daemon=True).start()
time.sleep(60)
"""


def test_the_tree_of_a_process_holds_its_children_and_their_memory():
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    tree: list[int] = []
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            tree = process_tree(child.pid)
            if len(tree) == 2 and all((rss_bytes(p) or 0) >= 60 * MB for p in tree):
                break
            time.sleep(0.05)
        assert len(tree) == 2 and tree[0] == child.pid, tree
        grandchild = tree[1]
        assert children(child.pid) == [grandchild]
        assert child.pid in children(os.getpid())
        assert process_tree(os.getpid())[0] == os.getpid() and set(tree) <= set(process_tree(os.getpid()))
        assert tree_rss_bytes(child.pid) >= 120 * MB
        assert tree_rss_bytes(os.getpid()) - (rss_bytes(os.getpid()) or 0) >= 120 * MB
    finally:
        for pid in reversed(tree or [child.pid]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        child.wait()
    assert tree_rss_bytes(child.pid) == 0
