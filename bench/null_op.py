"""What does the server spend per request? The null op (text in, its length
out: a model that costs nothing) over the full HTTP path, on batchline and its
peers, every server with dynamic batching on (max batch 32, ~1 ms wait) and
one worker per core, measured alike by one asyncio client (bench/lib/http_load.py):
req/s at 64 closed-loop clients, lone-request p50/p99, and the server's CPU
(its whole process tree, from /proc) over the loaded window.

Also batchline's own Flask app on granian (1 and 2 workers) next to
``batchline serve`` (waitress), for the front-end choice of issue 27.

The peers run in virtual environments of the bench's own, built on first use
from the registry (bench/lib/venvs.py); ``--no-install`` uses only built ones.
A server that cannot start is a row saying so, not a failure of the run.

    python -m bench.null_op                          # all, ~5-8 min on 2 cores
    python -m bench.null_op --only batchline,mosec --duration 5
    python -m bench.null_op --base 8c05ce7            # also batchline as that revision had it
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from contextlib import ExitStack

from bench.lib.http_load import closed_loop
from bench.lib.null_contenders import Contender, base_contenders, contenders, this_python
from bench.lib.null_run import Served, measured_row
from bench.lib.null_table import format_table, ratio_line, ratios
from bench.lib.results import write_result
from bench.lib.script import BenchError, chosen, first_line, run_main
from bench.lib.venvs import ensure_venv
from bench.revisions import worktree


def run_one(c: Contender, args: argparse.Namespace, config_dir: str, roots: dict[str, str]) -> dict:
    """One server's row; ``failed`` says why it did not run. ``roots``: checkouts of revisions."""
    row: dict = {"key": c.key, "title": c.title, "batching": c.batching, "note": c.note}
    try:
        python, versions = this_python(), {}
        if c.venv is not None:
            python, versions = ensure_venv(c.venv, install=not args.no_install)
        row["versions"] = versions
        served = start(c, python, config_dir, roots)
    except BenchError as exc:
        return {**row, "failed": first_line(exc)}
    row.update(measured_row(served, c.request, args, c.ready_timeout))
    return row


def start(c: Contender, python: str, config_dir: str, roots: dict[str, str]) -> Served:
    """``c``'s server on a free port, from its revision's checkout (``roots``) if it has one."""
    from tests.support.server_process import free_port

    port = free_port()
    root = roots.get(c.revision) if c.revision else None
    return Served(c.argv(python, port, config_dir), c.key, port, **({"root": root} if root else {}))


#: each of ours against the base revision's same server (``--base``), by key
PAIRS = {
    "batchline": "batchline_base",
    "batchline_fronts": "batchline_base_fronts",
    "batchline_fronts_native": "batchline_base_fronts_native",
}


def alternate(servers: list[Contender], args: argparse.Namespace, config_dir: str, roots: dict[str, str]) -> int:
    """Every server up at once, each measured ``--duration`` s in turn, ``--alternate`` rounds
    in rotated order: drift between servers measured minutes apart cancels in each round's
    ratio. Prints each round's req/s and the median per-round ratio of each pair."""
    running: dict[str, tuple[Served, Contender]] = {}
    try:
        for c in servers:
            running[c.key] = (start(c, this_python(), config_dir, roots), c)
        for served, c in running.values():
            served.wait_ready(c.request, c.ready_timeout)
        rates: dict[str, list[float]] = {key: [] for key in running}
        keys = list(running)
        for r in range(args.alternate):
            for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
                served, c = running[key]
                result = closed_loop("127.0.0.1", served.port, c.request, args.clients, args.duration, args.warmup)
                rates[key].append(result.rate)
                print(f"round {r} {key}: {result.rate:,.0f} req/s, errors {result.errors}", flush=True)
    finally:
        for served, _ in running.values():
            served.stop()
    for ours, base in PAIRS.items():
        if ours in rates and base in rates:
            ratio = statistics.median(a / b for a, b in zip(rates[ours], rates[base], strict=True))
            print(f"RATIO null_op req/s {ours}/{base} (median of {args.alternate} alternated rounds): {ratio:.3f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    keys = [c.key for c in contenders()]
    parser.add_argument("--only", default="", help=f"comma-separated servers, of: {','.join(keys)} (default: all)")
    parser.add_argument("--clients", type=int, default=64, help="closed-loop connections")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per server")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds of load before")
    parser.add_argument("--lone", type=int, default=400, help="lone requests per server (after 50 unmeasured)")
    parser.add_argument("--no-install", action="store_true", help="use built peer environments only (no network)")
    parser.add_argument("--base", default="", help="also batchline as this revision had it (a git worktree of it)")
    parser.add_argument(
        "--base-fronts", action="store_true", help="--base: also with front processes, Paddle and native routes"
    )
    parser.add_argument(
        "--alternate", type=int, default=0, metavar="ROUNDS", help="all servers up at once, measured in turn"
    )
    args = parser.parse_args()
    picked = chosen(args.only, keys)
    servers = [c for c in contenders() if c.key in picked]
    if args.base:
        servers[:0] = base_contenders(args.base, args.base_fronts)
    rows = []
    with tempfile.TemporaryDirectory(prefix="null-op-") as config_dir, ExitStack() as checkouts:
        roots = {args.base: checkouts.enter_context(worktree(args.base))} if args.base else {}
        if args.alternate:
            return alternate([c for c in servers if c.venv is None], args, config_dir, roots)
        for c in servers:
            print(f"=== {c.key}", flush=True)
            row = run_one(c, args, config_dir, roots)
            rows.append(row)
            if row.get("failed"):
                print(f"    could not run: {row['failed']}", flush=True)
            else:
                print(
                    f"    {row['req_per_s']:,.0f} req/s, lone p50 {row['lone_p50_ms']:.2f} ms, "
                    f"server CPU {row['server_cpu_pct']:.0f}%, errors {row['errors']}",
                    flush=True,
                )
    print()
    print(format_table(rows, args.clients))
    path = write_result(
        "null_op",
        {
            "clients": args.clients,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "lone": args.lone,
            "rows": rows,
            "ratios": ratios(rows),
        },
    )
    print(f"\nresults: {path}")
    print(ratio_line(rows))
    for ours, base in PAIRS.items():
        if {ours, base} <= {r["key"] for r in rows if not r.get("failed")}:
            print(f"RATIO null_op req/s {ours}/{base}: {ratios(rows, ours)[base]:.3f}x")
    return 0 if any(not r.get("failed") for r in rows) else 1


if __name__ == "__main__":
    run_main(main)
