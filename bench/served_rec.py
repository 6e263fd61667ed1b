"""Served rec against its bare engine and the peers: configs/rec.yml's model
(PP-OCRv4 rec, OpenVINO Runtime f32, one 1-thread instance per core) on the
bench's text-line crops, 32 closed-loop clients, side by side in one run:

* the bare engine, no server (the limit): one thread per instance, each
  decoding, preprocessing and reading one crop at a time (bench/lib/bare_rec.py);
* the engine alone: configs/rec.yml's pipeline in the bench's process, 32
  submitting threads, no HTTP (what the batcher and hand-offs cost, apart from
  the HTTP front's share);
* ``batchline serve configs/rec.yml``, the binary native upload (PNG body) and
  the Paddle Serving JSON (base64);
* mosec with max batch 1 and with dynamic batching (max batch 32, 5 ms wait),
  decode + preprocess in one worker, the model in one worker per core
  (bench/peers/rec_mosec.py), in a bench environment that sees the project's ops;
* Triton (PyTriton) is listed as could-not-run: its server does not start here.

One asyncio client (bench/lib/http_load.py, rotating_closed_loop) sends the crops in turn; every
server's texts are checked against the bare engine's on the first crops.

    python -m bench.served_rec                       # ~5 min on 2 cores
    python -m bench.served_rec --only bare,batchline,mosec_b1 --duration 10
    python -m bench.served_rec --base cf3e73e --only bare,batchline   # also batchline as cf3e73e had it
"""

from __future__ import annotations

import argparse
import gc
import sys
from contextlib import ExitStack

from bench.lib.bare_rec import bare_engine_loop, engine_loop, read_crop
from bench.lib.configs import repo_config_path
from bench.lib.http_load import HttpError, probe, rotating_closed_loop
from bench.lib.inprocess import make_op
from bench.lib.inputs import bench_crops
from bench.lib.null_run import HOST, Served
from bench.lib.paths import ROOT
from bench.lib.results import write_result
from bench.lib.script import BenchError, chosen, first_line, run_main
from bench.lib.served_rec_contenders import COULD_NOT_RUN, WORKERS, Contender, base_contender, contenders
from bench.lib.served_rec_table import BARE, format_table, of_bare, ratio_line
from bench.lib.venvs import ensure_venv
from bench.revisions import worktree

BARE_TITLE = f"bare engine, no server ({WORKERS} threads, one crop at a time): the limit"
ENGINE = "engine"
ENGINE_TITLE = "the engine of `configs/rec.yml` in the bench's process, no HTTP (submitting threads)"


def agreement(c: Contender, port: int, crops: list[bytes], reference: list[str]) -> tuple[str, list[str]]:
    """``k/n``: how many of the first crops the server reads as the bare engine does; the differing texts."""
    differ = []
    for png, want in zip(crops, reference):
        try:
            status, body = probe(HOST, port, c.request(png))
        except (OSError, HttpError) as exc:
            raise BenchError(f"{c.key}: no answer to a check crop ({exc!r})") from None
        got = c.text(body) if status == 200 else None
        if got != want:
            differ.append(f"{got!r} != {want!r}")
    return f"{len(reference) - len(differ)}/{len(reference)}", differ


def run_one(c: Contender, args: argparse.Namespace, crops: list[bytes], reference: list[str], root: str = ROOT) -> dict:
    """One server's row, run from ``root`` (a worktree for ``--base``); ``failed``: why it did not run."""
    from tests.support.server_process import free_port

    row: dict = {"key": c.key, "title": c.title, "note": c.note}
    try:
        python, versions = sys.executable, {}
        if c.venv is not None:
            python, versions = ensure_venv(c.venv, install=not args.no_install)
        row["versions"] = versions
        port = free_port()
        served = Served(c.argv(python, port), f"rec-{c.key}", port, root)
    except BenchError as exc:
        return {**row, "failed": first_line(exc)}
    try:
        served.wait_ready(c.request(crops[0]), c.ready_timeout)
        row["log"] = served.log_path
        row["agree"], row["differ"] = agreement(c, port, crops, reference)
        requests = [c.request(png) for png in crops]
        result = rotating_closed_loop(HOST, port, requests, args.clients, args.duration, args.warmup)
        doc = result.to_dict()
        row.update(doc, crops_per_s=doc.pop("req_per_s"))
    except BenchError as exc:
        row["failed"] = first_line(exc)
    finally:
        served.stop()
    return row


def bare_row(args: argparse.Namespace, crops: list[bytes], checked: int, run: bool) -> tuple[dict, list[str]]:
    """The bare engine's row (measured if ``run``) and its texts of the first ``checked`` crops (the reference)."""
    op, runners = make_op(repo_config_path("rec"), "rec", WORKERS)
    reference = [read_crop(op, runners[0], png)[0] for png in crops[:checked]]
    row: dict = {"key": BARE, "title": BARE_TITLE, "agree": f"{checked}/{checked} (reference)"}
    if not run:
        return {**row, "skipped": True}, reference
    doc = bare_engine_loop(op, runners, crops, duration_s=args.duration, warmup_s=args.warmup).to_dict()
    row.update(doc, crops_per_s=doc.pop("req_per_s"), service_ms=doc.pop("latency_ms"))
    return row, reference


def report(row: dict) -> None:
    if row.get("failed"):
        print(f"    could not run: {row['failed']}", flush=True)
        return
    lat = row["latency_ms"]
    print(
        f"    {row['crops_per_s']:.1f} crops/s, p50 {lat['p50']:.0f} ms, p99 {lat['p99']:.0f} ms, "
        f"errors {row['errors']}, texts agree {row['agree']}",
        flush=True,
    )


def engine_row(args: argparse.Namespace, crops: list[bytes], reference: list[str]) -> dict:
    """The served engine without its HTTP front, ``args.clients`` submitting threads."""
    result, texts = engine_loop(
        repo_config_path("rec"),
        crops,
        clients=args.clients,
        duration_s=args.duration,
        warmup_s=args.warmup,
        texts=len(reference),
    )
    doc = result.to_dict()
    differ = [f"{got!r} != {want!r}" for got, want in zip(texts, reference) if got != want]
    agree = f"{len(reference) - len(differ)}/{len(reference)}"
    return {
        "key": ENGINE,
        "title": ENGINE_TITLE,
        "agree": agree,
        "differ": differ,
        **doc,
        "crops_per_s": doc.pop("req_per_s"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    keys = [BARE, ENGINE, *(c.key for c in contenders())]
    parser.add_argument("--only", default="", help=f"comma-separated, of: {','.join(keys)} (default: all)")
    parser.add_argument("--clients", type=int, default=32, help="closed-loop connections per server")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per row")
    parser.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds of load before")
    parser.add_argument("--check", type=int, default=8, help="first crops whose texts must match the bare engine's")
    parser.add_argument("--no-install", action="store_true", help="use built peer environments only (no network)")
    parser.add_argument("--base", default="", help="also batchline as this revision had it, just before ours")
    args = parser.parse_args()
    picked = chosen(args.only, keys)
    crops = bench_crops()
    print(f"{len(crops)} crops, {args.clients} clients, {args.warmup:.0f} s warm-up + {args.duration:.0f} s counted")
    print(f"=== {BARE}", flush=True)
    bare, reference = bare_row(args, crops, args.check, BARE in picked)
    rows = [] if bare.get("skipped") else [bare]
    if rows:
        print(f"    {bare['crops_per_s']:.1f} crops/s", flush=True)
    gc.collect()  # the bare engine's runners go before the servers start
    if ENGINE in picked:
        print(f"=== {ENGINE}", flush=True)
        rows.append(engine_row(args, crops, reference))
        report(rows[-1])
        gc.collect()
    servers = [c for c in contenders() if c.key in picked]
    if args.base:
        servers.insert(0, base_contender(args.base))
    with ExitStack() as checkouts:
        roots = {args.base: checkouts.enter_context(worktree(args.base))} if args.base else {}
        for c in servers:
            print(f"=== {c.key}", flush=True)
            rows.append(run_one(c, args, crops, reference, roots.get(c.revision, ROOT)))
            report(rows[-1])
    rows += [{"key": key, "title": title, "failed": why} for key, (title, why) in COULD_NOT_RUN.items()]
    print()
    print(format_table(rows, args.clients))
    path = write_result(
        "served_rec",
        {
            "config": "configs/rec.yml",
            "crops": len(crops),
            "clients": args.clients,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rows": rows,
            "of_bare": of_bare(rows),
        },
    )
    print(f"\nresults: {path}")
    print(ratio_line(rows))
    ran = [r for r in rows if not r.get("failed")]
    disagree = [r["key"] for r in ran if r.get("differ")]
    if disagree:
        print(f"texts differ from the bare engine's: {disagree}")
    return 0 if ran and not disagree else 1


if __name__ == "__main__":
    run_main(main)
