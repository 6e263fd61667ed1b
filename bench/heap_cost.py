"""What giving freed memory back costs an OCR server: minor page faults and CPU
per request, this tree against another revision, side by side.

A server that returns freed pages to the system (serving/runners/heap_trim.py)
faults them in again when it reuses them; the cost is per request and shows as
minor faults (each a zeroed 4 KiB page) and CPU time, both read from /proc for
the server and its children. One client sends the OCR sample pages
(tests/data/ocr/sample) in order, after a warm-up round, to each server in turn,
``--rounds`` times (this, other, other, this, ...). Prints faults and CPU ms per
request for each server and the median ratio this / other.

    python -m bench.heap_cost --base 866b69d
    python -m bench.heap_cost --base 866b69d --env MALLOC_TRIM_THRESHOLD_=8388608   # another trim threshold here
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import statistics
import time
from pathlib import Path

import requests

from bench.lib.inputs import sample_page_pngs
from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import run_main
from bench.lib.server import served
from bench.revisions import worktree
from serving.runners.process_memory import children


def faults_and_cpu(pid: int) -> tuple[int, float]:
    """Minor faults and CPU seconds (user + system) of ``pid`` and its children."""
    faults, cpu = 0, 0.0
    for p in [pid, *children(pid)]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        faults += int(fields[7])
        cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return faults, cpu


def per_request(server, bodies: list[str], repeat: int) -> tuple[float, float]:
    """(minor faults, CPU ms) per request over ``repeat`` passes of ``bodies``, one at a time."""
    with requests.Session() as session:
        for body in bodies:  # warm: every page size seen once
            session.post(f"{server.url}/ocr/prediction", data=body, timeout=120).raise_for_status()
        time.sleep(3)  # a look of the heap trim between warm-up and measure
        f0, c0 = faults_and_cpu(server.proc.pid)
        for _ in range(repeat):
            for body in bodies:
                session.post(f"{server.url}/ocr/prediction", data=body, timeout=120).raise_for_status()
        f1, c1 = faults_and_cpu(server.proc.pid)
    n = repeat * len(bodies)
    return (f1 - f0) / n, (c1 - c0) / n * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the other revision (commit, tag, branch)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="passes over the sample pages per measure")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="set in this tree's server")
    args = ap.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    bodies = [json.dumps({"key": ["image"], "value": [base64.b64encode(p).decode()]}) for p in sample_page_pngs()]
    seen: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
    with contextlib.ExitStack() as stack:
        roots = {"this": ROOT, "other": stack.enter_context(worktree(args.base))}
        for round_no in range(args.rounds):
            order = ["this", "other"] if round_no % 2 == 0 else ["other", "this"]
            for label in order:
                root = roots[label]
                with served(f"{root}/configs/ocr.yml", root=root, env=env if label == "this" else None) as server:
                    faults, cpu_ms = per_request(server, bodies, args.repeat)
                seen[label].append((faults, cpu_ms))
                print(f"round {round_no} {label:5}: {faults:8.0f} minor faults/request, {cpu_ms:7.1f} CPU ms/request")
    ratio = statistics.median(t[1] / o[1] for t, o in zip(seen["this"], seen["other"]))
    faults = {k: statistics.median(f for f, _ in v) for k, v in seen.items()}
    print(f"faults/request: this {faults['this']:.0f}, {args.base} {faults['other']:.0f}")
    print(f"RATIO CPU ms/request this / {args.base} = {ratio:.3f}x")
    write_result("heap_cost", {"args": vars(args), "rounds": seen, "cpu_ratio": ratio, "faults": faults})
    return 0


if __name__ == "__main__":
    run_main(main)
