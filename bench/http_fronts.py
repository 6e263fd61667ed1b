"""What does an HTTP front alone cost per request? A trivial app (JSON body in, its
text's length out) behind each front batchline could use, measured as the null op
is (bench/lib/null_run.py): req/s at 64 closed-loop clients, lone p50, server CPU.
One process each; the fronts and apps are in bench/peers/front_ceiling.py.

    python -m bench.http_fronts                  # ~2 min on 2 cores
"""

from __future__ import annotations

import argparse
import sys

from bench.lib.null_contenders import plain_request
from bench.lib.null_run import Served, measured_row
from bench.lib.results import write_result
from bench.lib.script import run_main
from bench.peers.front_ceiling import FRONTS

TITLES = {
    "waitress": "waitress, raw WSGI app",
    "asyncio": "batchline's asyncio front, raw WSGI app",
    "waitress_flask": "waitress, Flask app",
    "asyncio_flask": "batchline's asyncio front, Flask app",
    "uvicorn_asgi": "uvicorn (httptools, uvloop), raw ASGI app, no worker thread",
    "uvicorn_h11": "uvicorn (h11, uvloop), raw ASGI app, no worker thread",
    "granian": "granian (Rust, hyper), raw WSGI app on its blocking threads",
}


def main() -> int:
    from tests.support.server_process import free_port

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--lone", type=int, default=300)
    args = parser.parse_args()
    request = plain_request("/null/predict")  # a path that takes a body (the HTTP server refuses one elsewhere)
    rows = []
    for front in FRONTS:
        port = free_port()
        argv = [sys.executable, "-m", "bench.peers.front_ceiling", "--front", front, "--port", str(port)]
        served = Served(argv, front, port)
        row: dict = {"front": front, "title": TITLES[front]}
        row.update(measured_row(served, request, args, ready_timeout=60))
        rows.append(row)
        print(f"{front}: {row.get('req_per_s', row.get('failed'))}", flush=True)
    base = next((r["req_per_s"] for r in rows if r["front"] == "waitress_flask" and "req_per_s" in r), None)
    print()
    print("| front | req/s at 64 clients | / waitress + Flask | lone p50 ms | server CPU ms per request |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "failed" in r:
            print(f"| {r['title']} | (could not run: {r['failed']}) | — | — | — |")
            continue
        ratio = f"{r['req_per_s'] / base:.2f}x" if base else "—"
        per = r["server_cpu_per_request_ms"]
        print(f"| {r['title']} | {r['req_per_s']:,.0f} | {ratio} | {r['lone_p50_ms']:.2f} | {per:.3f} |")
    print(f"\nresults: {write_result('http_fronts', {'clients': args.clients, 'rows': rows})}")
    rate = {r["front"]: r.get("req_per_s") for r in rows}
    if rate.get("asyncio_flask") and rate.get("waitress_flask"):
        gain = rate["asyncio_flask"] / rate["waitress_flask"]
        print(f"RATIO http_fronts req/s asyncio/waitress, Flask app: {gain:.2f}x")
    return 0


if __name__ == "__main__":
    run_main(main)
