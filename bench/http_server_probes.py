"""The HTTP servers we could serve with, held to issue 38's HTTP attacks.

Each server runs the same trivial app (``bench/peers/front_ceiling.py``: JSON in, its
text's length out) and gets the attacks of ``tests/support/reliability/door_attacks.py``
that need no batchline route: a header that never ends (1 and 16 connections), many
unfinished headers, pipelined requests whose answers are never read, 2-byte chunks.
What each server answered and how much its RSS grew is the table: the probes half of
choosing one HTTP server (docs/DESIGN_NOTES.md, "The house, round 3"; the speed half
is ``python -m bench.http_fronts``).

    python -m bench.http_server_probes           # asyncio, uvicorn (httptools, h11), waitress, granian
    python -m bench.http_server_probes --only asyncio,uvicorn_asgi
"""

from __future__ import annotations

import argparse
import sys

from bench.lib.null_contenders import plain_request
from bench.lib.null_run import Served
from bench.lib.script import chosen, run_main
from tests.support.reliability.door_attacks import (
    MB,
    Door,
    DoorAttack,
    chunked_crumbs,
    endless_header,
    format_door_table,
    pipelined_unread,
    run_door_attack,
    unfinished_headers,
)
from tests.support.server_process import free_port

SERVERS = {
    "asyncio": "batchline's HTTP server (serving/http/http_server.py), raw WSGI app",
    "uvicorn_asgi": "uvicorn, httptools protocol, raw ASGI app",
    "uvicorn_h11": "uvicorn, h11 protocol, raw ASGI app",
    "waitress": "waitress, raw WSGI app",
    "granian": "granian (Rust, hyper), raw WSGI app",
}
BODY_LIMIT = 1 * MB  # what front_ceiling's asyncio server takes (its app's body_limit)


def attacks() -> list[DoorAttack]:
    """The HTTP rows of issue 38's table that any server can be asked; every answer is allowed
    (the table shows them): what is compared is what each server holds."""
    anything = frozenset({"431", "413", "400", "200", "503", "closed", "open", "unread"})
    return [
        DoorAttack("endless_header", "http", "a header that never ends", 1, endless_header(1), anything),
        DoorAttack("endless_header_16", "http", "the same on 16 connections", 16, endless_header(16), anything),
        DoorAttack(
            "unfinished_headers",
            "http",
            "64 connections of 208 KB of tiny headers",
            64,
            unfinished_headers(64),
            anything,
        ),
        DoorAttack(
            "pipelined_unread",
            "http",
            "4 MB of pipelined GETs on one connection, answers never read",
            1,
            pipelined_unread(),
            anything,
        ),
        DoorAttack(
            "chunked_crumbs", "http", "2-byte chunks, 4 connections", 4, chunked_crumbs(4, seconds=10.0), anything
        ),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help=f"comma-separated servers, of: {','.join(SERVERS)}")
    args = ap.parse_args()
    for key in chosen(args.only, list(SERVERS)):
        port = free_port()
        served = Served(
            [sys.executable, "-m", "bench.peers.front_ceiling", "--front", key, "--port", str(port)], key, port
        )
        door = Door("127.0.0.1", port, None, "token", "p", b"", BODY_LIMIT, 4 * BODY_LIMIT)
        try:
            served.wait_ready(plain_request("/null/predict"), timeout=60)  # answering, and rightly
            outcomes = [run_door_attack(door, served.proc.pid, attack) for attack in attacks()]
        finally:
            served.stop()
        print(f"\n### {SERVERS[key]}\n")
        print(format_door_table(outcomes), flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
