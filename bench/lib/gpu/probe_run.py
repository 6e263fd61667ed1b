"""The GPU probe's steps, one process each, one after another, each within its budget.

A GPU host is lent rarely and briefly, so nothing measured may be lost: a step runs in a
process of its own (a hang or a broken CUDA context ends with it), is stopped past its
budget (SIGTERM to its process group, which unwinds it and stops its servers; SIGKILL
after a grace), and whatever it wrote is kept with its status. ``on_step`` is told of each
step as it ends (the CLI writes the JSON and markdown there), and the next step runs
whatever the last one did. The run as a whole has a budget too: a step gets at most what
is left of it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# with less than this left of the run a step is not started (recorded as skipped): it could not even load
MIN_BUDGET_S = 5.0
# after SIGTERM, the seconds a step has to unwind (stop its servers) before SIGKILL
GRACE_S = 15.0
OK, FAILED, TIMEOUT, SKIPPED = "ok", "failed", "timeout", "skipped"

ArgvOf = Callable[[str, str], list[str]]  # (step, result file) -> the step's command line


def run_step(argv: Sequence[str], budget_s: float, result_file: str, log_file: str) -> dict[str, Any]:
    """Run one step's process within ``budget_s``; its record: status, seconds, budget,
    what it wrote (``result``) and, when it did not end well, why (``error``)."""
    start = time.perf_counter()
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(list(argv), stderr=log, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=budget_s)
        except subprocess.TimeoutExpired:
            code = None
            stop_group(proc)
    record: dict[str, Any] = {
        "status": OK if code == 0 else TIMEOUT if code is None else FAILED,
        "seconds": round(time.perf_counter() - start, 1),
        "budget_s": round(budget_s, 1),
        "result": read_result(result_file),
    }
    if code is None:
        record["error"] = f"stopped after its budget of {budget_s:.0f} s"
    elif code != 0:
        record["error"] = record["result"].pop("error", None) or last_line(log_file) or f"exit {code}"
        record["exit"] = code
    return record


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the step's process group (it and its servers), SIGKILL after the grace."""
    for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            if sig == signal.SIGTERM:
                # the step is gone; anything it started and left behind goes too
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def read_result(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def last_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    return lines[-1][:500] if lines else None


def run_steps(
    names: Sequence[str],
    budgets_s: Mapping[str, float],
    total_s: float,
    argv_of: ArgvOf,
    folder: str,
    on_step: Callable[[str, dict[str, Any]], None],
) -> dict[str, dict[str, Any]]:
    """Every step of ``names`` in order, each result file and log under ``folder``; the records."""
    os.makedirs(folder, exist_ok=True)
    records: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for name in names:
        left = total_s - (time.perf_counter() - started)
        budget = min(budgets_s[name], left)
        if left < MIN_BUDGET_S:
            records[name] = {"status": SKIPPED, "error": f"{max(left, 0):.0f} s left of the run's {total_s:.0f} s"}
        else:
            result_file = os.path.join(folder, f"{name}.json")
            if os.path.exists(result_file):
                os.unlink(result_file)  # a file of an earlier run in this folder is not this one's
            records[name] = run_step(
                argv_of(name, result_file), budget, result_file, os.path.join(folder, f"{name}.log")
            )
        on_step(name, records[name])
    return records
