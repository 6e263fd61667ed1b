"""What does each front end cost against the HTTP one? One server (``batchline
serve --rpc-port``) measured through the bundled client over each protocol
(``--protocol`` of `batchline predict`/`bench`): ``http`` (Paddle Serving's JSON,
``POST /NAME/prediction``), ``grpc`` (Paddle Serving's PipelineService on
rpc_port), ``v2`` (the Open Inference Protocol over HTTP, binary tensors) and
``v2-grpc`` (its ModelInfer on rpc_port).

* lone requests, one at a time, two ways: interleaved, every protocol once per
  round in a fresh random order (bench/lib/lone_requests.py), p50/p99 and the
  p50's difference to http's; and in blocks, ``--lone`` requests of one protocol
  back to back, the protocols in a rotated order each round, the median of the
  blocks' p50s (what a client that speaks one protocol sees: in the interleaved
  order each call follows another protocol's, whose threads and caches it inherits);
* throughput: ``--clients`` closed-loop clients (client/loadgen.py) for
  ``--duration`` s per protocol, the protocols one after another in a rotated
  order each round (ABCD, BCDA, ...), so a noisy moment hits all of them alike;
  the ratio to http is the median over rounds of that round's ratio. The server
  tree's and this client's CPU per request come with it.

Workloads: the null op (bench/lib/null_op.py: the model costs nothing, so the
front end is most of a request) and ERNIE (configs/ernie.yml, the embedded demo
model on OpenVINO) on one short text. Goal (issue 28): gRPC's lone-request
overhead <= HTTP's and its throughput within 5% of HTTP's at 8 clients.

    nice -n 5 python -m bench.front_protocols                      # both, ~5 min on 2 cores
    nice -n 5 python -m bench.front_protocols --only null --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.lib.http_load import HttpRequest, latency_summary_ms
from bench.lib.null_run import Served
from bench.lib.paths import ROOT
from bench.lib.results import verdict, write_result
from bench.lib.script import BenchError, chosen, run_main

#: table row -> the client's --protocol
FRONTS = {"http": "paddle", "grpc": "grpc", "v2": "v2", "v2-grpc": "v2-grpc"}
BASE = "http"
GOAL_THROUGHPUT = 0.95  # within 5% of http's
ERNIE_TEXT = "Tel: 138-1234-5678"


@dataclass(frozen=True)
class Workload:
    """A config served once, the pipeline asked, the one text sent, and the probe that says it is ready."""

    key: str
    title: str
    config: Callable[[str], str]  # config folder -> config path
    pipeline: str
    text: str
    probe: Callable[[], HttpRequest]
    ready_timeout: float


def _null_config(folder: str) -> str:
    from bench.lib.null_contenders import WORKERS
    from bench.lib.null_op import write_null_config

    return write_null_config(folder, instances=WORKERS)


def _null_probe() -> HttpRequest:
    from bench.lib.null_contenders import batchline_request

    return batchline_request()


def _ernie_probe() -> HttpRequest:
    from bench.front_workers import request_of

    return request_of("ernie", None, ERNIE_TEXT)


def workloads() -> list[Workload]:
    from bench.lib.null_contenders import TEXT
    from bench.lib.null_op import NAME

    return [
        Workload("null", "null op (text in, its length out)", _null_config, NAME, TEXT, _null_probe, 60.0),
        Workload(
            "ernie",
            "ERNIE (configs/ernie.yml, one short text)",
            lambda _folder: os.path.join(ROOT, "configs", "ernie.yml"),
            "ernie",
            ERNIE_TEXT,
            _ernie_probe,
            180.0,
        ),
    ]


# ----------------------------------------------------------------------------- pure parts


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    """``names`` starting at ``round_index`` (mod their count): every name takes every place in turn."""
    k = round_index % len(names)
    return [*names[k:], *names[:k]]


def paired_ratio(rounds: Sequence[Mapping[str, float]], name: str, base: str = BASE) -> float:
    """The median over rounds of ``name``'s value over ``base``'s in that round (NaN without a pair)."""
    pairs = [r[name] / r[base] for r in rounds if r.get(base) and name in r]
    return statistics.median(pairs) if pairs else float("nan")


def summarize(
    lone_s: Mapping[str, Sequence[float]],
    rounds: Sequence[Mapping[str, Mapping[str, Any]]],
    blocks_s: Mapping[str, Sequence[Sequence[float]]] | None = None,
    base: str = BASE,
) -> list[dict[str, Any]]:
    """One row per front: lone p50/p99 (ms) and the p50 over ``base``'s, interleaved and (``blocks_s``:
    each round's seconds of one block per front) in blocks, the median req/s over rounds and the
    paired ratio to ``base``, CPU per request (server, client) and errors."""
    lone = {name: latency_summary_ms(list(v)) for name, v in lone_s.items()}
    block_p50 = {
        name: statistics.median(latency_summary_ms(list(b))["p50"] for b in blocks)
        for name, blocks in (blocks_s or {}).items()
    }
    qps = [{name: m["req_per_s"] for name, m in r.items()} for r in rounds]
    rows = []
    for name in lone_s:
        mine = [r[name] for r in rounds if name in r]

        def median_of(key: str, mine: list[Mapping[str, Any]] = mine) -> float:
            values = [m[key] for m in mine if m.get(key) is not None]
            return statistics.median(values) if values else float("nan")

        rows.append(
            {
                "front": name,
                "lone_p50_ms": lone[name]["p50"],
                "lone_p99_ms": lone[name]["p99"],
                "lone_delta_ms": round(lone[name]["p50"] - lone[base]["p50"], 3),
                "block_p50_ms": block_p50.get(name, float("nan")),
                "block_delta_ms": round(block_p50[name] - block_p50[base], 3) if block_p50 else float("nan"),
                "req_per_s": median_of("req_per_s"),
                "throughput_ratio": paired_ratio(qps, name, base),
                "server_cpu_ms": median_of("server_cpu_ms"),
                "client_cpu_ms": median_of("client_cpu_ms"),
                "errors": sum(m.get("errors", 0) for m in mine),
            }
        )
    return rows


def format_table(rows: Sequence[Mapping[str, Any]], clients: int) -> str:
    lines = [
        f"| front | lone p50 / p99 ms | lone p50 vs http | lone p50 in blocks ms | vs http "
        f"| req/s at {clients} clients | vs http | server CPU ms/request | client CPU ms/request | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['front']} | {r['lone_p50_ms']:.2f} / {r['lone_p99_ms']:.2f} | {r['lone_delta_ms']:+.3f} ms "
            f"| {r['block_p50_ms']:.2f} | {r['block_delta_ms']:+.3f} ms "
            f"| {r['req_per_s']:,.0f} | {r['throughput_ratio']:.3f}x | {r['server_cpu_ms']:.3f} "
            f"| {r['client_cpu_ms']:.3f} | {r['errors']} |"
        )
    return "\n".join(lines)


def goal_lines(workload: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The issue's goal for each gRPC front: lone overhead <= http's, throughput >= 95% of http's."""
    out = []
    for r in rows:
        if r["front"] in ("grpc", "v2-grpc"):
            lone = verdict(r["lone_delta_ms"], 0.0, higher_is_better=False)
            block = verdict(r["block_delta_ms"], 0.0, higher_is_better=False)
            rate = verdict(r["throughput_ratio"], GOAL_THROUGHPUT)
            out.append(
                f"GOAL {workload} {r['front']}: lone p50 {r['lone_delta_ms']:+.3f} ms vs http {lone} "
                f"(in blocks {r['block_delta_ms']:+.3f} ms {block}); throughput {r['throughput_ratio']:.3f}x "
                f"of http {rate}"
            )
    return out


# ----------------------------------------------------------------------------- measuring


class Sender:
    """One front's prepared request and a client per caller (the bundled client, ``protocol``)."""

    def __init__(self, url: str, rpc_url: str, protocol: str, pipeline: str, text: str):
        from client.protocols import prepare

        self.url, self.rpc_url, self.protocol, self.pipeline = url, rpc_url, protocol, pipeline
        self.request = prepare([("text", text)], protocol)

    def client(self) -> Any:
        from client.pipeline_client import PipelineClient

        return PipelineClient(self.url, rpc_url=self.rpc_url, timeout=30.0, pool_size=2)

    def send(self, client: Any, _i: int = 0) -> list[Any]:
        return client.results(self.pipeline, self.request, self.protocol)


def same_answers(senders: Mapping[str, Sender]) -> None:
    """BenchError unless every front answers the one request with the same results."""
    answers = {}
    for name, sender in senders.items():
        with sender.client() as c:
            answers[name] = sender.send(c)
    if any(a != answers[BASE] for a in answers.values()):
        raise BenchError(f"the fronts answer differently: {answers}")


def measure_lone(senders: Mapping[str, Sender], n: int) -> dict[str, list[float]]:
    from bench.lib.lone_requests import lone_seconds

    clients = {name: s.client() for name, s in senders.items()}
    try:
        calls = {name: (lambda s=s, c=clients[name]: s.send(c)) for name, s in senders.items()}
        return lone_seconds(calls, n, warmup=50)
    finally:
        for c in clients.values():
            c.close()


def measure_lone_blocks(senders: Mapping[str, Sender], n: int, rounds: int) -> dict[str, list[list[float]]]:
    """Per front, each round's block of ``n`` lone requests back to back (fronts in a rotated order)."""
    clients = {name: s.client() for name, s in senders.items()}
    blocks: dict[str, list[list[float]]] = {name: [] for name in senders}
    try:
        for r in range(rounds):
            for name in rotated(list(senders), r):
                sender, client = senders[name], clients[name]
                for _ in range(20):  # this front's connection and the server's path warm again
                    sender.send(client)
                seconds = []
                for _ in range(n):
                    began = time.perf_counter()
                    sender.send(client)
                    seconds.append(time.perf_counter() - began)
                blocks[name].append(seconds)
    finally:
        for c in clients.values():
            c.close()
    return blocks


def measure_loaded(served: Served, sender: Sender, clients: int, duration_s: float, warmup_s: float) -> dict:
    """``clients`` closed-loop clients: a warm-up level, then the measured one with the server tree's CPU."""
    from bench.lib.measure import cpu_used, tree_cpu_seconds
    from client.loadgen import run_closed_loop

    run_closed_loop(sender.client, sender.send, clients, duration_s=warmup_s)
    before, client_before = tree_cpu_seconds([served.proc.pid]), time.process_time()
    level = run_closed_loop(sender.client, sender.send, clients, duration_s=duration_s)
    server_s = cpu_used(before, tree_cpu_seconds([served.proc.pid]))
    client_s = time.process_time() - client_before
    per = 1000 / level.ok if level.ok else float("nan")
    return {
        "req_per_s": level.qps,
        "errors": level.failed,
        "latency_ms": level.latency_ms,
        "server_cpu_ms": server_s * per,
        "client_cpu_ms": client_s * per,
    }


def run_workload(w: Workload, args: argparse.Namespace, folder: str) -> dict:
    from tests.support.server_process import free_port

    port, rpc_port = free_port(), free_port()
    argv = [sys.executable, "-m", "serving.cli", "serve", w.config(folder), "--host", "127.0.0.1"]
    served = Served([*argv, "--port", str(port), "--rpc-port", str(rpc_port)], f"protocols-{w.key}", port)
    try:
        served.wait_ready(w.probe(), w.ready_timeout)
        url, rpc_url = f"http://127.0.0.1:{port}", f"127.0.0.1:{rpc_port}"
        senders = {name: Sender(url, rpc_url, protocol, w.pipeline, w.text) for name, protocol in FRONTS.items()}
        same_answers(senders)
        lone = measure_lone(senders, args.lone)
        blocks = measure_lone_blocks(senders, args.lone, args.rounds)
        rounds: list[dict[str, dict]] = []
        for r in range(args.rounds):
            measured = {}
            for name in rotated(list(FRONTS), r):
                measured[name] = measure_loaded(served, senders[name], args.clients, args.duration, args.warmup)
                print(f"  round {r + 1} {name}: {measured[name]['req_per_s']:,.0f} req/s", flush=True)
            rounds.append(measured)
    finally:
        served.stop()
    rows = summarize(lone, rounds, blocks)
    return {"workload": w.key, "title": w.title, "rows": rows, "rounds": rounds, "log": served.log_path}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    keys = [w.key for w in workloads()]
    parser.add_argument("--only", default="", help=f"comma-separated workloads, of: {','.join(keys)} (default: all)")
    parser.add_argument("--clients", type=int, default=8, help="closed-loop clients")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every front's closed loop")
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per front and round")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds of load before each")
    parser.add_argument("--lone", type=int, default=300, help="lone requests per front (after 50 unmeasured)")
    args = parser.parse_args()
    picked = chosen(args.only, keys)
    results = []
    with tempfile.TemporaryDirectory(prefix="front-protocols-") as folder:
        for w in workloads():
            if w.key in picked:
                print(f"=== {w.title}", flush=True)
                results.append(run_workload(w, args, folder))
    lines: list[str] = []
    for res in results:
        print(f"\n{res['title']}\n\n{format_table(res['rows'], args.clients)}")
        lines += goal_lines(res["workload"], res["rows"])
    doc = {"clients": args.clients, "rounds": args.rounds, "duration_s": args.duration, "lone": args.lone}
    print(f"\nresults: {write_result('front_protocols', {**doc, 'workloads': results})}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    run_main(main)
