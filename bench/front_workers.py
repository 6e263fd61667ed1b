"""Does moving HTTP into front processes pay on a real pipeline? The same
config served by ``batchline serve --front-workers K`` for each K given (0: HTTP
in the engine's process), alternated over rounds, measured alike: req/s at
``--clients`` closed-loop clients, lone-request p50/p99 and the server tree's
CPU per request. Ratios are against K=0 of the same round.

    python -m bench.front_workers                                   # OCR page, 0 vs 2, ~6 min
    python -m bench.front_workers --config configs/ernie.yml --pipeline ernie --text "好评 good"
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys

from bench.lib.http_load import HttpRequest
from bench.lib.null_run import Served, measure
from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import run_main

DEFAULT_IMAGE = os.path.join(ROOT, "tests", "data", "ocr", "sample", "04-en-8x24.png")


def request_of(pipeline: str, image: str | None, text: str | None) -> HttpRequest:
    """A Paddle Serving request of one image (or one text) whose answer must be err_no 0."""
    if text is not None:
        key, value = "text", text
    else:
        with open(image or DEFAULT_IMAGE, "rb") as f:
            key, value = "image", base64.b64encode(f.read()).decode("ascii")
    body = json.dumps({"key": [key], "value": [value]}).encode()

    def ok(answer: bytes) -> bool:
        try:
            return json.loads(answer).get("err_no") == 0
        except ValueError:
            return False

    return HttpRequest(f"/{pipeline}/prediction", body, check=ok)


def run_round(args: argparse.Namespace, fronts: int, request: HttpRequest) -> dict:
    from tests.support.server_process import free_port

    port = free_port()
    argv = [sys.executable, "-m", "serving.cli", "serve", args.config, "--port", str(port)]
    served = Served([*argv, "--front-workers", str(fronts)], f"fronts{fronts}", port)
    try:
        served.wait_ready(request, args.ready_timeout)
        row = measure(
            served, request, clients=args.clients, duration_s=args.duration, warmup_s=args.warmup, lone=args.lone
        )
    finally:
        served.stop()
    return {"front_workers": fronts, **row}


def summary(rows: list[dict], fronts: list[int]) -> list[dict]:
    """Per K: the median over rounds, and its ratio to K=0 round by round (median)."""
    out = []
    for k in fronts:
        mine = [r for r in rows if r["front_workers"] == k]
        base = [r for r in rows if r["front_workers"] == fronts[0]]
        out.append(
            {
                "front_workers": k,
                "req_per_s": statistics.median(r["req_per_s"] for r in mine),
                "ratio": statistics.median(m["req_per_s"] / b["req_per_s"] for m, b in zip(mine, base)),
                "lone_p50_ms": statistics.median(r["lone_p50_ms"] for r in mine),
                "lone_p99_ms": statistics.median(r["lone_p99_ms"] for r in mine),
                "p99_ms": statistics.median(r["latency_ms"]["p99"] for r in mine),
                "server_cpu_pct": statistics.median(r["server_cpu_pct"] for r in mine),
                "cpu_ms_per_request": statistics.median(r["server_cpu_per_request_ms"] for r in mine),
            }
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/ocr.yml")
    parser.add_argument("--pipeline", default="ocr")
    parser.add_argument("--image", default=None, help=f"image sent (default: {os.path.relpath(DEFAULT_IMAGE, ROOT)})")
    parser.add_argument("--text", default=None, help="send this text instead of an image")
    parser.add_argument("--fronts", default="0,2", help="front_workers values, comma separated (first: the base)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--lone", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ready-timeout", type=float, default=300.0)
    args = parser.parse_args()
    fronts = [int(k) for k in args.fronts.split(",")]
    request = request_of(args.pipeline, args.image, args.text)
    rows = []
    for r in range(args.rounds):
        for k in fronts:
            row = run_round(args, k, request)
            rows.append(row)
            print(
                f"round {r + 1} front_workers {k}: {row['req_per_s']:,.1f} req/s, lone p50 {row['lone_p50_ms']:.1f} ms,"
                f" CPU {row['server_cpu_pct']:.0f}%, errors {row['errors']}",
                flush=True,
            )
    table = summary(rows, fronts)
    print(f"\n{args.config}, {args.clients} clients, median of {args.rounds} rounds")
    print("| front_workers | req/s | vs 0 | lone p50 / p99 ms | p99 ms at load | server CPU | CPU ms / request |")
    print("|---|---|---|---|---|---|---|")
    for t in table:
        print(
            f"| {t['front_workers']} | {t['req_per_s']:,.1f} | {t['ratio']:.2f}x | {t['lone_p50_ms']:.1f} / "
            f"{t['lone_p99_ms']:.1f} | {t['p99_ms']:.0f} | {t['server_cpu_pct']:.0f}% | {t['cpu_ms_per_request']:.2f} |"
        )
    name = f"front_workers_{args.pipeline}"
    path = write_result(name, {"config": args.config, "clients": args.clients, "rows": rows, "summary": table})
    print(f"\nresults: {path}")
    for t in table[1:]:
        print(f"RATIO front_workers {t['front_workers']}/{fronts[0]} req/s {args.pipeline}: {t['ratio']:.2f}x")
    return 0


if __name__ == "__main__":
    run_main(main)
