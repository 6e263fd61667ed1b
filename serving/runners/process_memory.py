"""How much memory a process holds, read from Linux /proc: its resident set, its
high-water mark (which can be restarted), and that of its whole process tree.
Where /proc cannot tell (gone, or not Linux) a single process's figure is None;
a process that exits between two reads is simply not counted."""

from __future__ import annotations

import os


def rss_bytes(pid: int) -> int | None:
    """The resident memory of process ``pid`` (None where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            resident_pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes(pid: int) -> int | None:
    """The high-water mark of process ``pid``'s resident memory (VmHWM; None where unreadable)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
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
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``, whichever of its threads started them."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out  # exited (or not Linux)
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (e.g. a server and its predictor processes), parents first."""
    out: list[int] = []
    todo, seen = [pid], set()
    while todo:
        p = todo.pop(0)
        if p in seen or not os.path.isdir(f"/proc/{p}"):
            continue
        seen.add(p)
        out.append(p)
        todo.extend(children(p))
    return out


def tree_rss_bytes(pid: int) -> int:
    """The resident memory of ``pid`` and every descendant (0 where none can be read)."""
    return sum(rss_bytes(p) or 0 for p in process_tree(pid))
