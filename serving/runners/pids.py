"""Whether a process runs, by its id (for files and segments that record their
owner's pid). How much memory it holds: :mod:`serving.runners.process_memory`."""

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
