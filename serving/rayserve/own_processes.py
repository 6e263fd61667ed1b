"""The processes a command started below itself (a local Ray cluster), killed if still
alive after it stops them. Known by pid and start time, so a reused pid is left alone.
"""

from __future__ import annotations

import logging
import os
import signal
import time

from serving.runners.pids import stat_fields
from serving.runners.process_memory import process_tree

log = logging.getLogger(__name__)


def _start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks since boot); None once the process is gone."""
    fields = stat_fields(pid)
    # fields[0] is field 3 (state); a zombie is gone for our purpose (its parent reaps it)
    if not fields or fields[0] == "Z" or len(fields) < 20:
        return None
    return fields[19]


def descendants(pid: int | None = None) -> dict[int, str]:
    """The live processes below ``pid`` (default: this one), pid -> start time."""
    root = os.getpid() if pid is None else pid
    found = {}
    for child in process_tree(root)[1:]:
        started = _start_time(child)
        if started is not None:
            found[child] = started
    return found


def alive(processes: dict[int, str]) -> list[int]:
    """Those of ``processes`` that still run (the same process: same pid, same start time)."""
    return [pid for pid, started in processes.items() if _start_time(pid) == started]


def reap(processes: dict[int, str], grace_s: float) -> list[int]:
    """Wait up to ``grace_s`` for ``processes`` to end, then SIGKILL the rest; returns those killed."""
    end = time.monotonic() + grace_s
    left = alive(processes)
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = alive(processes)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    if left:
        log.warning("killed %d process(es) of the local Ray cluster that outlived its shutdown: %s", len(left), left)
    return left
