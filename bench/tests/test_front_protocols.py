"""The protocol bench's pure parts (bench/front_protocols.py), without servers:
the rotated order of each round, the paired throughput ratio, the rows, the
table and the goal lines; and that every front's client protocol exists."""

from __future__ import annotations

import math

import pytest

from bench import front_protocols as fp
from client.protocols import PROTOCOLS


def test_every_front_is_a_client_protocol_and_http_is_the_base():
    assert set(fp.FRONTS.values()) <= set(PROTOCOLS)
    assert fp.FRONTS[fp.BASE] == "paddle"
    assert [w.key for w in fp.workloads()] == ["null", "ernie"]


def test_rounds_rotate_so_each_front_takes_each_place():
    names = ["a", "b", "c"]
    orders = [fp.rotated(names, r) for r in range(4)]
    assert orders == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_the_ratio_is_the_median_of_each_rounds_own_ratio():
    rounds = [{"http": 100.0, "grpc": 110.0}, {"http": 50.0, "grpc": 45.0}, {"http": 80.0, "grpc": 84.0}]
    # per round 1.10, 0.90, 1.05: the median pairs a slow round's grpc with that round's http
    assert fp.paired_ratio(rounds, "grpc") == pytest.approx(1.05)
    assert fp.paired_ratio(rounds, "http") == 1.0
    assert math.isnan(fp.paired_ratio([{"http": 0.0, "grpc": 1.0}], "grpc"))


def _loaded(rate: float, server: float, errors: int = 0) -> dict:
    return {"req_per_s": rate, "errors": errors, "server_cpu_ms": server, "client_cpu_ms": 0.2}


def test_rows_table_and_goals():
    lone = {"http": [0.001] * 9 + [0.003], "grpc": [0.0009] * 9 + [0.002], "v2-grpc": [0.0012] * 10}
    rounds = [
        {"http": _loaded(1000, 0.5), "grpc": _loaded(990, 0.55), "v2-grpc": _loaded(900, 0.6, errors=1)},
        {"http": _loaded(800, 0.5), "grpc": _loaded(830, 0.57), "v2-grpc": _loaded(720, 0.6)},
    ]
    blocks = {"http": [[0.001] * 5, [0.0012] * 5], "grpc": [[0.0011] * 5, [0.0013] * 5], "v2-grpc": [[0.002] * 5] * 2}
    rows = fp.summarize(lone, rounds, blocks)
    by = {r["front"]: r for r in rows}
    assert [r["front"] for r in rows] == ["http", "grpc", "v2-grpc"]
    assert by["http"]["lone_p50_ms"] == 1.0 and by["http"]["lone_p99_ms"] == 3.0
    assert by["grpc"]["lone_delta_ms"] == pytest.approx(-0.1) and by["v2-grpc"]["lone_delta_ms"] == pytest.approx(0.2)
    assert by["grpc"]["req_per_s"] == 910 and by["grpc"]["throughput_ratio"] == pytest.approx((0.99 + 1.0375) / 2)
    assert by["grpc"]["server_cpu_ms"] == pytest.approx(0.56) and by["v2-grpc"]["errors"] == 1
    table = fp.format_table(rows, 8)
    assert "req/s at 8 clients" in table.splitlines()[0]
    assert by["grpc"]["block_p50_ms"] == pytest.approx(1.2) and by["grpc"]["block_delta_ms"] == pytest.approx(0.1)
    assert "| grpc | 0.90 / 2.00 | -0.100 ms | 1.20 | +0.100 ms | 910 | 1.014x | 0.560 | 0.200 | 0 |" in table
    goals = fp.goal_lines("null", rows)
    assert goals == [
        "GOAL null grpc: lone p50 -0.100 ms vs http MET (in blocks +0.100 ms MISSED); throughput 1.014x of http MET",
        "GOAL null v2-grpc: lone p50 +0.200 ms vs http MISSED (in blocks +0.900 ms MISSED); throughput 0.900x of "
        "http MISSED",
    ]
