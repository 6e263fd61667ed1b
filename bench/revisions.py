"""This tree's server against another revision's, side by side: is a change
free of performance cost?

Checks the other revision out into a temporary git worktree, starts both
servers on the same config (each with its own code), and measures them in
interleaved rounds (A B, then B A, ...) with the same client and the same
pages: the OCR test pages committed under tests/data/ocr/sample. Prints
images/s and p50 per round and the median ratio this / other per client count.

    python bench/revisions.py --base 570fb95 [--config configs/ocr.yml] [--clients 1,8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import pipeline_name  # noqa: E402
from bench.lib.inputs import sample_page_pngs  # noqa: E402
from bench.lib.measure import closed_loop, image_payloads  # noqa: E402
from bench.lib.paths import ROOT  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import BenchError, run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the other revision (commit, tag, branch)")
    ap.add_argument("--config", default="configs/ocr.yml", help="config path, relative to each checkout")
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    args = ap.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    base = _git("rev-parse", "--short", args.base)
    head = _git("rev-parse", "--short", "HEAD")
    payloads = image_payloads(sample_page_pngs())
    qps: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="batchline-rev-") as tmp:
        worktree = os.path.join(tmp, base)
        _git("worktree", "add", "--detach", worktree, base)
        try:
            config = os.path.join(worktree, args.config)
            with served(args.config) as this, served(config, root=worktree) as other:
                name = pipeline_name(os.path.join(ROOT, args.config))
                urls = {"this": this.url, "other": other.url}
                for rnd in range(args.rounds):
                    order = ("this", "other") if rnd % 2 == 0 else ("other", "this")
                    for who in order:
                        for c in clients:
                            res = closed_loop(urls[who], name, payloads, c, args.duration, args.warmup)
                            qps.setdefault((who, c), []).append(res["qps"])
                            print(
                                f"round {rnd} {who:5s} ({head if who == 'this' else base}) {c:2d} clients: "
                                f"{res['qps']:6.2f} images/s  p50 {res['latency_ms']['p50']:7.1f} ms",
                                flush=True,
                            )
        finally:
            _git("worktree", "remove", "--force", worktree)
    ratios = {c: statistics.median(t / o for t, o in zip(qps[("this", c)], qps[("other", c)])) for c in clients}
    write_result(
        "revisions",
        {
            "this": head,
            "other": base,
            "config": args.config,
            "images_per_s": {f"{who}_{c}": v for (who, c), v in qps.items()},
            "ratio_median": ratios,
        },
    )
    summary = ", ".join(f"{c} clients {r:.3f}x" for c, r in ratios.items())
    print(f"RATIO {head} / {base} images/s (median of paired rounds) = {summary}")
    return 0


if __name__ == "__main__":
    run_main(main)
