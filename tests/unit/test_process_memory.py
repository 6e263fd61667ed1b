"""serving.runners.process_memory on this test process: resident memory, its
high-water mark and restarting it, and what a pid no process has gives."""

from __future__ import annotations

import os

import pytest

from serving.runners.process_memory import (
    children,
    peak_rss_bytes,
    process_tree,
    reset_peak,
    rss_bytes,
    tree_rss_bytes,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux /proc")
MB = 1 << 20


def vm_rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_the_resident_memory_of_this_process_is_what_its_status_shows():
    assert rss_bytes(os.getpid()) == pytest.approx(vm_rss_bytes(), rel=0.05)


def test_the_peak_holds_what_was_freed_until_it_is_reset():
    before = rss_bytes(os.getpid()) or 0
    block = bytearray(b"\x01") * (96 * MB)  # written, so resident
    del block
    peak = peak_rss_bytes(os.getpid()) or 0
    assert peak >= before + 80 * MB
    if not reset_peak(os.getpid()):
        pytest.skip("/proc/self/clear_refs is not writable here")
    assert (peak_rss_bytes(os.getpid()) or 0) < peak - 64 * MB


def test_the_tree_of_a_process_starts_with_it_and_counts_at_least_its_own_memory():
    tree = process_tree(os.getpid())
    assert tree[0] == os.getpid()
    assert set(children(os.getpid())) <= set(tree)
    assert tree_rss_bytes(os.getpid()) >= 0.9 * (rss_bytes(os.getpid()) or 0)


@pytest.mark.parametrize("pid", [-1, 0, 1 << 40])
def test_a_pid_no_process_has_reads_as_nothing(pid):
    assert rss_bytes(pid) is None and peak_rss_bytes(pid) is None
    assert reset_peak(pid) is False
    assert children(pid) == [] and process_tree(pid) == [] and tree_rss_bytes(pid) == 0
