"""Well-behaved clients' latency while 200 slow-loris connections hold the server.

``batchline serve configs/rec.yml`` with ``http: {request_timeout_s: T}``
(``--request-timeout``). Normal load: ``--clients`` closed-loop clients, one
crop per request. Rounds alternate *unloaded* (normal load only) and
*loaded* (the same, while ``--slow`` connections trickle their request a
byte every 0.2 s: half the headers, half the body of a declared
Content-Length; a connection the server closes is opened again, as an
attacker would). Prints the normal clients' p50/p99 per phase (pooled over
rounds), loaded p99 / unloaded p99 (target <= 2), and how long the server
let the slow connections live (target: closed at ~T).

    python -m bench.slow_clients [--slow 200 --clients 4 --duration 10 --rounds 2 --request-timeout 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from bench.lib.configs import derive_config, pipeline_name
from bench.lib.inputs import bench_crops
from bench.lib.measure import closed_loop, image_payloads
from bench.lib.results import verdict, write_result
from bench.lib.script import run_main
from bench.lib.server import served
from client.stats import percentile
from tests.support.slow_client import Slow

BODY = json.dumps({"key": ["image"], "value": ["x" * 2000]}).encode()


def slow_request(name: str, kind: int) -> tuple[bytes, int]:
    """A request and how much of it goes in the first send: even kinds trickle
    headers, odd ones a body."""
    head = f"POST /{name}/prediction HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n".encode()
    if kind % 2 == 0:
        return head + b"X-Slow: " + b"a" * 2000 + b"\r\n\r\n", 1
    lines = head + b"Content-Length: %d\r\n\r\n" % len(BODY)
    return lines + BODY, len(lines)


class Attack:
    """``count`` slow connections kept open (reopened when closed) until stopped."""

    def __init__(self, port: int, name: str, count: int):
        self.port, self.name, self.count = port, name, count
        self.lifetimes: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="slow-loris", daemon=True)

    def _open(self, kind: int) -> Slow:
        data, first = slow_request(self.name, kind)
        return Slow(self.port, data, first=first)

    def _run(self) -> None:
        conns = [self._open(i) for i in range(self.count)]
        while not self.stop.is_set():
            for i, c in enumerate(conns):
                c.send()
                c.poll()
                if c.closed_after is not None:
                    self.lifetimes.append(c.closed_after)
                    conns[i] = self._open(i)
            time.sleep(0.2)
        for c in conns:
            c.sock.close()

    def __enter__(self) -> Attack:
        self.thread.start()
        time.sleep(1.0)  # every connection open and trickling before the clients start
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slow", type=int, default=200, help="slow-loris connections")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per phase and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--request-timeout", type=float, default=5.0, help="http.request_timeout_s of the server")
    args = ap.parse_args()

    config = derive_config("rec", tag="slow-clients", top={"http": {"request_timeout_s": args.request_timeout}})
    name = pipeline_name(config)
    payloads = image_payloads(bench_crops()[:64])
    latencies: dict[str, list[float]] = {"unloaded": [], "loaded": []}
    lifetimes: list[float] = []
    errors: dict[str, dict] = {"unloaded": {}, "loaded": {}}
    with served(config) as server:
        closed_loop(server.url, name, payloads, args.clients, 3.0, 1.0)  # warm every shape
        for r in range(args.rounds):
            for phase in ("unloaded", "loaded") if r % 2 == 0 else ("loaded", "unloaded"):
                if phase == "loaded":
                    with Attack(server.port, name, args.slow) as attack:
                        res = closed_loop(
                            server.url, name, payloads, args.clients, args.duration, 1.0, keep_latencies=True
                        )
                    lifetimes += attack.lifetimes
                else:
                    res = closed_loop(server.url, name, payloads, args.clients, args.duration, 1.0, keep_latencies=True)
                latencies[phase] += res["latencies_s"]
                for status, n in res["errors"].items():
                    errors[phase][status] = errors[phase].get(status, 0) + n
                print(
                    f"round {r} {phase:8s}: {res['qps']:.1f} req/s, p50 {res['latency_ms']['p50']:.1f} ms, "
                    f"p99 {res['latency_ms']['p99']:.1f} ms, errors {res['errors'] or 0}",
                    flush=True,
                )
    p = {k: (1000 * percentile(v, 50), 1000 * percentile(v, 99)) for k, v in latencies.items()}  # s -> ms
    ratio = p["loaded"][1] / p["unloaded"][1]
    for k, (p50, p99) in p.items():
        print(f"{k:8s}: p50 {p50:.1f} ms, p99 {p99:.1f} ms over {len(latencies[k])} requests, errors {errors[k] or 0}")
    if lifetimes:
        print(
            f"slow connections closed by the server: {len(lifetimes)}, "
            f"lifetime median {statistics.median(lifetimes):.2f} s, min {min(lifetimes):.2f} s, "
            f"max {max(lifetimes):.2f} s (request_timeout_s {args.request_timeout})"
        )
    print(f"loaded p99 / unloaded p99 = {ratio:.2f} (target <= 2: {verdict(ratio, 2.0, higher_is_better=False)})")
    write_result(
        "slow_clients",
        {
            "args": vars(args),
            "ms": p,
            "errors": errors,
            "ratio": ratio,
            "closed": len(lifetimes),
            "lifetimes": lifetimes,
        },
    )
    print(f"RATIO slow clients p99 loaded / unloaded = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    run_main(main)
