"""Facts about a process by its id: whether it runs (for files and segments
that record their owner's pid) and how much memory it holds (the memory guard)."""

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


def rss_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` (None where /proc cannot tell: gone, or not Linux)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            resident_pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes(pid: int) -> int | None:
    """The high-water mark of process ``pid``'s resident memory (VmHWM; None where unreadable)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return None


def reset_peak(pid: int) -> bool:
    """Restart ``pid``'s high-water mark from its current resident memory (Linux
    /proc/PID/clear_refs); False where that is not possible."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True
