"""Facts about a process by its id: whether it runs, and its ``/proc/<pid>/stat`` fields."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (also one of another user's, which may not be signalled).

    ``pid`` may come from a name or a file anyone could have written: one that no
    process can have (0 and below signal process groups; too large for a pid_t
    raises OverflowError) is not alive."""
    if not 0 < pid < 1 << 31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, so ``[0]`` is field 3
    (state), ``[1]`` the parent's pid, ``[11]``/``[12]`` user/system clock ticks, ``[19]``
    the start time; None when the process is gone (or this is not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            # the command name (field 2) may hold spaces and parentheses: split after its last ")"
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
