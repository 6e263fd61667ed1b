"""pid_alive takes pids read from names and files anyone could have written."""

from __future__ import annotations

import os

import pytest

from serving.runners.pids import pid_alive, stat_fields


def test_this_process_is_alive():
    assert pid_alive(os.getpid())


@pytest.mark.parametrize("pid", [10**30, 1 << 31, 1 << 63, 0, -1, -os.getpid()])
def test_a_pid_no_process_can_have_is_not_alive_and_does_not_raise(pid):
    # (0 and negative pids would signal process groups: ours among them)
    assert pid_alive(pid) is False


def test_stat_fields_of_this_process_and_of_none():
    fields = stat_fields(os.getpid())
    assert fields is not None and fields[0] in "RS" and int(fields[1]) == os.getppid()
    assert stat_fields(1 << 30) is None
