"""Which precision profile is fastest without losing accuracy? (issue 14)

Runs each profile (a config plus per-op overrides, bench/lib/precision_profiles.py)
over the evaluation page set (tests/support/page_set.py: >= 200 rendered pages
with known text, English / Chinese / mixed, many fonts, sizes, layouts, mild
noise) through our own ops in this process, and prints per profile:

* char accuracy against the ground truth (tests/support/ocr_accuracy.py:
  lines matched by position, NFKC, spaces removed), and its difference from
  the exact profile with a paired bootstrap 95% interval over pages;
* line parity with PaddleOCR 2.10 on oneDNN fp32 (identical text, spaces
  included; and without spaces), and box shift against it (largest corner
  distance per line: mean over lines / max);
* ms per page per op and in all: a single-process loop, one page at a time,
  ``thread_num`` threads per op (not served throughput, which is measured
  elsewhere). Noisy on a shared machine; the accuracy figures are not.

Profiles whose needs the machine lacks (bf16 on a CPU without it, int8 without
NNCF) are listed as unavailable, never measured on a substitute. int8 models
are NNCF post-training quantizations calibrated on pages of another seed
(``--calib-seed``); their per-call speed against fp32 is measured too.
The pick: the fastest profile whose char accuracy is at least the exact one's.

    python -m bench.precision_profiles [--pages 200] [--profiles exact,int8-rec] \
        [--profile 'ov=ocr,det.engine=openvino,rec.engine=openvino']
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from bench.lib.engines import THREADS
from bench.lib.int8 import nncf_problem
from bench.lib.ocr_chain import StageResult, run_profiles
from bench.lib.ov_runtime import cpu_capabilities
from bench.lib.precision_profiles import PROFILES, Profile, parse_profile
from bench.lib.precision_speed import int8_call_speed
from bench.lib.precision_table import Row, pick, table
from bench.lib.reference_cache import paddleocr_reference
from bench.lib.results import write_result
from bench.lib.runtime_runners import RuntimeRunners
from bench.lib.script import BenchError, run_main

DEFAULT = (
    "exact",
    "paddle-openvino",
    "fast",
    "rec-bucket",
    "bf16-det",
    "bf16-rec",
    "bf16-det+rec",
    "int8-det",
    "int8-rec",
    "int8-det+rec",
    "int8-det+rec-bucket",
)
BASE = "exact"


def choose(names: str, extra: list[str]) -> list[Profile]:
    """The profiles asked for, the base profile first if it was not."""
    known = {p.name: p for p in PROFILES}
    wanted = list(known) if names == "all" else [n for n in names.split(",") if n]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise BenchError(f"unknown profiles {unknown}; choose from {sorted(known)} or 'all'")
    chosen = [known[n] for n in wanted] + [parse_profile(s) for s in extra]
    if BASE not in [p.name for p in chosen]:
        chosen.insert(0, known[BASE])  # every delta and speed-up is against it
    return chosen


def score(
    profile: Profile,
    stages: Sequence[tuple[str, StageResult]],
    pages: Sequence[Any],
    reference: Sequence[Sequence[dict]],
) -> Row:
    """A measured profile's row: accuracy against the pages' (``EvalPage``) text, parity with ``reference``."""
    from tests.support.ocr_accuracy import ParityScore, parity, score_page

    final = stages[-1][1].outputs
    total = ParityScore()
    for ref, ours in zip(reference, final):
        total.add(parity(ref, ours))
    stage_ms = {op: result.ms_per_page for op, result in stages}
    return Row(
        profile.name,
        profile.note,
        scores=[score_page(p.lines, out) for p, out in zip(pages, final)],
        parity=total,
        stage_ms=stage_ms,
        ms_per_page=sum(stage_ms.values()),
    )


def main() -> int:
    from tests.support.page_set import CALIBRATION_SEED, EVAL_COUNT, EVAL_SEED, PAGE_SET_VERSION, page_set, variety
    from tests.support.page_set import page_specs as specs_of

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default=",".join(DEFAULT), help="comma-separated profile names, or 'all'")
    ap.add_argument("--profile", action="append", default=[], help="an extra profile: name=config[,op.key=value ...]")
    ap.add_argument("--seed", type=int, default=EVAL_SEED, help="evaluation page set seed")
    ap.add_argument("--pages", type=int, default=EVAL_COUNT, help="evaluation pages")
    ap.add_argument("--threads", type=int, default=1, help="thread_num of every op")
    ap.add_argument("--ref-threads", type=int, default=THREADS, help="PaddleOCR reference cpu_threads")
    ap.add_argument("--warm", type=int, default=5, help="pages each op runs untimed first")
    ap.add_argument("--calib-seed", type=int, default=CALIBRATION_SEED, help="int8 calibration page set seed")
    ap.add_argument("--calib-pages", type=int, default=100, help="int8 calibration pages (det feeds)")
    ap.add_argument("--calib-crops", type=int, default=300, help="int8 calibration crops (rec feeds)")
    ap.add_argument("--speed-calls", type=int, default=6, help="int8 per-call speed: calls per round (0: skip)")
    args = ap.parse_args()
    if args.calib_seed == args.seed:
        raise BenchError("--calib-seed must differ from --seed: calibrate on other pages than those measured")
    profiles = choose(args.profiles, args.profile)

    capabilities = cpu_capabilities()
    nncf_missing = nncf_problem()
    print(f"CPU capabilities (OpenVINO): {', '.join(sorted(capabilities)) or 'unknown (no openvino)'}")
    print(f"int8 (NNCF): {nncf_missing or 'available'}")

    started = time.perf_counter()
    pages = list(page_set(args.seed, args.pages))
    seen = variety(specs_of(args.seed, args.pages))
    n_lines = sum(len(p.lines) for p in pages)
    print(
        f"page set: seed {args.seed}, {len(pages)} pages, {n_lines} lines "
        f"(rendered in {time.perf_counter() - started:.0f} s); scripts {dict(seen['script'])}, "
        f"{len(seen['face'])} faces, sizes {min(seen['size'])}-{max(seen['size'])} px, "
        f"layouts {dict(seen['layout'])}, noise levels {dict(sorted(seen['noise'].items()))}"
    )
    images = [p.image for p in pages]
    reference, ref_run = paddleocr_reference(
        images, seed=args.seed, version=PAGE_SET_VERSION, threads=args.ref_threads, warm=args.warm
    )
    print(
        f"reference: PaddleOCR 2.10 on oneDNN fp32, cpu_threads {ref_run['cpu_threads']}, "
        f"{ref_run['ms_per_page']:.0f} ms/page "
        f"({'cached, from ' + ref_run['time'] if ref_run['cached'] else 'this run'})"
    )

    from tests.support.ocr_accuracy import score_page

    ref_row = Row(
        "PaddleOCR 2.10 (reference)", "oneDNN fp32", scores=[score_page(p.lines, r) for p, r in zip(pages, reference)]
    )
    calibration = [p.image for p in page_set(args.calib_seed, args.calib_pages)] if not nncf_missing else []
    runtime = RuntimeRunners(
        calibration,
        threads=args.threads,
        tag=f"set{PAGE_SET_VERSION}-seed{args.calib_seed}-p{args.calib_pages}",
        crops=args.calib_crops,
    )
    rows: dict[str, Row] = {}
    runnable = []
    for profile in profiles:
        missing = profile.missing(capabilities, nncf_missing is None)
        if not missing:
            runnable.append(profile)
            continue
        reason = ", ".join(
            "not supported on this CPU" if m.upper() in ("BF16", "INT8") else (nncf_missing or m) for m in missing
        )
        rows[profile.name] = Row(
            profile.name, profile.note, status="unavailable", reason=f"{reason} (needs {', '.join(missing)})"
        )
        print(f"{profile.name}: unavailable: {rows[profile.name].reason}")

    def failed(profile: Profile, exc: Exception) -> None:
        rows[profile.name] = Row(profile.name, profile.note, status="failed", reason=f"{type(exc).__name__}: {exc}")
        print(f"{profile.name}: failed: {rows[profile.name].reason}")

    began = time.perf_counter()
    measured = run_profiles(
        runnable,
        images,
        threads=args.threads,
        warm=args.warm,
        memo={},
        runtime_runner=runtime.for_profile,
        runtime_tags=runtime.tags,
        on_error=failed,
    )
    print(f"{len(measured)} profiles measured in {time.perf_counter() - began:.0f} s (stages interleaved page by page)")
    for profile in runnable:
        if profile.name in measured:
            rows[profile.name] = score(profile, measured[profile.name], pages, reference)
    rows = {p.name: rows[p.name] for p in profiles}

    base = rows[BASE]
    if not base.measured:
        raise BenchError(f"the {BASE} profile could not run: {base.reason}")
    longest_first = sorted(rows.values(), key=lambda r: -len(r.stage_ms))  # a det -> cls -> rec chain sets the order
    ops = list(dict.fromkeys(op for r in longest_first for op in r.stage_ms))
    print()
    print(table([ref_row, *rows.values()], base, ops))
    print(
        f"\nchar accuracy: ground-truth lines matched by position, NFKC, spaces removed; parity: PaddleOCR's "
        f"lines with identical text; ms: one page at a time in one process, {args.threads} thread(s) per op"
    )

    speed = None
    if args.speed_calls > 0 and not nncf_missing and "INT8" in capabilities:
        speed = int8_call_speed(runtime, threads=args.threads, calls=args.speed_calls)
        print(f"\nint8 per call, {args.threads} thread(s), median ms (interleaved rounds):")
        for shape, by_runner in speed.items():
            print(f"  {shape}: " + ", ".join(f"{k} {v:.1f}" for k, v in by_runner.items()))

    chosen = pick(list(rows.values()), base)
    print(
        f"\npick: {chosen.name if chosen else 'none'} "
        f"(fastest with char accuracy >= {BASE}'s {100 * base.accuracy:.2f}%)"
    )
    write_result(
        "precision_profiles",
        {
            "args": vars(args),
            "pages": len(pages),
            "lines": n_lines,
            "cpu_capabilities": sorted(capabilities),
            "nncf": nncf_missing or "available",
            "reference": {**ref_run, **ref_row.to_dict(None)},
            "profiles": [r.to_dict(base) for r in rows.values()],
            "int8_call_ms": speed,
            "pick": chosen.name if chosen else None,
        },
    )
    if chosen is not None and chosen.ms_per_page and base.ms_per_page:
        print(f"RATIO {chosen.name} / {BASE} speed = {base.ms_per_page / chosen.ms_per_page:.2f}")
    return 0


if __name__ == "__main__":
    run_main(main)
