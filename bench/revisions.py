"""This tree's server against another revision's, side by side: is a change
free of performance cost?

Checks the other revision out into a temporary git worktree and starts both
servers on the same config, each with its own code. Two measures:

* **throughput** (default): ``--config`` on the OCR test pages committed under
  tests/data/ocr/sample, closed loops at ``--clients``, in interleaved rounds
  (A B, then B A, ...). Prints images/s and p50 per round and the median ratio
  this / other per client count.
* **the serving path alone** (``--model-free``): a model-free op
  (tests/support/image_fakes.py's ``ImageStatsOp``: decodes the image, sums a
  row), one crop of the rec bench, lone requests to both servers in a fresh
  random order every round, and each server's HTTP floor (``GET
  /health/live``). A request costs ~2 ms and no model time varies, so a change
  of tens of µs in HTTP, JSON, base64, decode or the engine's hand-offs shows.
  The server started first can be a little faster: run both start orders
  (``--other-first``) and take the mean of "this - other".

    python -m bench.revisions --base 570fb95 [--config configs/ocr.yml] [--clients 1,8] [--rounds 3]
    python -m bench.revisions --base 570fb95 --model-free [--requests 600] [--other-first]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator

from bench.lib.configs import pipeline_name, write_config
from bench.lib.inputs import bench_crops, sample_page_pngs
from bench.lib.lone_requests import lone_p50_ms
from bench.lib.measure import closed_loop, image_payloads
from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[str]:
    """``rev`` checked out in a temporary git worktree, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="batchline-rev-") as tmp:
        path = os.path.join(tmp, rev)
        _git("worktree", "add", "--detach", path, rev)
        try:
            yield path
        finally:
            _git("worktree", "remove", "--force", path)


def throughput(args: argparse.Namespace, other_root: str, labels: dict[str, str]) -> str:
    """Closed loops on ``args.config``, both servers up, interleaved rounds; the RATIO line."""
    clients = [int(c) for c in args.clients.split(",")]
    payloads = image_payloads(sample_page_pngs())
    qps: dict[tuple[str, int], list[float]] = {}
    with served(args.config) as this, served(os.path.join(other_root, args.config), root=other_root) as other:
        name = pipeline_name(os.path.join(ROOT, args.config))
        urls = {"this": this.url, "other": other.url}
        for rnd in range(args.rounds):
            order = ("this", "other") if rnd % 2 == 0 else ("other", "this")
            for who in order:
                for c in clients:
                    res = closed_loop(urls[who], name, payloads, c, args.duration, args.warmup)
                    qps.setdefault((who, c), []).append(res["qps"])
                    print(
                        f"round {rnd} {who:5s} ({labels[who]}) {c:2d} clients: "
                        f"{res['qps']:6.2f} images/s  p50 {res['latency_ms']['p50']:7.1f} ms",
                        flush=True,
                    )
    ratios = {c: statistics.median(t / o for t, o in zip(qps[("this", c)], qps[("other", c)])) for c in clients}
    write_result(
        "revisions",
        {
            "this": labels["this"],
            "other": labels["other"],
            "config": args.config,
            "images_per_s": {f"{who}_{c}": v for (who, c), v in qps.items()},
            "ratio_median": ratios,
        },
    )
    summary = ", ".join(f"{c} clients {r:.3f}x" for c, r in ratios.items())
    return f"RATIO {labels['this']} / {labels['other']} images/s (median of paired rounds) = {summary}"


def serving_path(args: argparse.Namespace, other_root: str, labels: dict[str, str]) -> str:
    """Lone requests through a model-free op on both servers, and their HTTP floors; the RATIO line."""
    import yaml

    from client.pipeline_client import PipelineClient
    from tests.support.image_fakes import image_config

    config = write_config(
        yaml.safe_load(image_config(delay_ms=0, per_item_ms=0, max_queue_delay=10, worker_num=16)), tag="revisions"
    )
    crops = bench_crops()
    payload = image_payloads([crops[len(crops) // 2]])[0]
    roots = {"this": None, "other": other_root}
    with contextlib.ExitStack() as stack:
        calls: dict[str, Callable[[], object]] = {}
        for who in ("other", "this") if args.other_first else ("this", "other"):
            server = stack.enter_context(served(config, root=roots[who]))
            client = stack.enter_context(PipelineClient(server.url, pool_size=1))
            calls[who] = functools.partial(client.predict_raw, "img", payload)
            calls[f"HTTP floor, {who}"] = client.health_live
        p50 = lone_p50_ms(calls, args.requests)
    for name, ms in p50.items():
        print(f"{name:18s} p50 {ms:7.3f} ms")
    diff = p50["this"] - p50["other"]
    floor = p50["HTTP floor, this"] - p50["HTTP floor, other"]
    print(f"this - other: {diff:+.3f} ms (HTTP floors: {floor:+.3f} ms)")
    write_result(
        "revisions_model_free",
        {"this": labels["this"], "other": labels["other"], "args": vars(args), "p50_ms": p50},
    )
    ratio = p50["this"] / p50["other"]
    return f"RATIO {labels['this']} / {labels['other']} lone-request p50, model-free op = {ratio:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the other revision (commit, tag, branch)")
    ap.add_argument("--config", default="configs/ocr.yml", help="config path, relative to each checkout")
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--model-free", action="store_true", help="the serving path alone: lone requests, a model-free op")
    ap.add_argument("--requests", type=int, default=600, help="--model-free: lone requests per server")
    ap.add_argument("--other-first", action="store_true", help="--model-free: start the other server first")
    args = ap.parse_args()
    labels = {"this": _git("rev-parse", "--short", "HEAD"), "other": _git("rev-parse", "--short", args.base)}
    with worktree(labels["other"]) as other_root:
        measure = serving_path if args.model_free else throughput
        print(measure(args, other_root, labels))
    return 0


if __name__ == "__main__":
    run_main(main)
