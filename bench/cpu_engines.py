"""The GPU check's CPU reference on each CPU engine: configs/ocr.yml served on two cores,
once per engine, every server up at once and measured side by side (the order reversing from
level to level), the OCR pipeline on the 12 committed sample pages at each client level,
over rounds; each engine's lines against PaddleOCR's, and its requests/s over the first
engine's (the median of the rounds).

A GPU host has ONNX Runtime but no OpenVINO, so its check's reference runs on ONNX Runtime
(bench/lib/gpu/reference.py); this says what that reference is worth against the shipped
CPU engine, on a machine that has both (docs/BENCHMARKS.md, "GPU").

    python -m bench.cpu_engines [--engines openvino,onnxruntime] [--levels 1,8,32] [--rounds 3] [--duration 10]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main

RESULT = "cpu_engines"
NAME = "ocr"


def parser() -> argparse.ArgumentParser:
    from bench.lib.gpu import reference

    ap = argparse.ArgumentParser(prog="python -m bench.cpu_engines", description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default=",".join(reference.ENGINES), help="the first is the one others are over")
    ap.add_argument("--levels", default="1,8,32", help="closed-loop clients, comma separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per level and engine")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds before each measurement")
    return ap


def median_ratios(rounds: list[list[dict[str, Any]]], engines: list[str]) -> list[dict[str, Any]]:
    """Per level, each engine's median requests/s over the rounds, and the median of its
    per-round ratio to the first engine's (None where a round measured nothing)."""
    out = []
    for i, first_round_row in enumerate(rounds[0]):
        rows = [r[i] for r in rounds]
        level: dict[str, Any] = {"clients": first_round_row["clients"]}
        for engine in engines:
            rates = [row[engine].get("req_per_s") for row in rows]
            level[engine] = statistics.median(rates) if None not in rates else None
            pairs = [(row[engine].get("req_per_s"), row[engines[0]].get("req_per_s")) for row in rows]
            ratios = [a / b for a, b in pairs if a is not None and b]
            level[f"{engine}/{engines[0]}"] = round(statistics.median(ratios), 3) if len(ratios) == len(rows) else None
        out.append(level)
    return out


def main() -> int:
    from bench.lib.gpu import configs, lines, load, reference
    from bench.lib.measure import image_payloads
    from bench.lib.server import served_together
    from tests.support.ocr_data import answers

    args = parser().parse_args()
    engines = [e for e in args.engines.split(",") if e]
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if len(engines) < 2 or len(set(engines)) != len(engines):
        raise BenchError(f"--engines {args.engines}: two or more different engines")
    for engine in engines:
        reference.reference_engine(engine)  # refused here, by name, when not installed
    cpus = reference.distinct_cores()
    repositories = {
        e: configs.write_repository(reference.reference_config(e, NAME), e, with_rec=False) for e in engines
    }
    pages = tuple(range(len(answers()[lines.SET])))
    pngs = lines.page_pngs(pages)
    payloads = image_payloads(pngs)
    print(f"configs/ocr.yml on {', '.join(engines)}, each on CPUs {cpus}; {len(pages)} pages", flush=True)
    rounds = []
    with served_together(repositories, cpus=dict.fromkeys(engines, cpus)) as servers:
        urls = {e: servers[e].url for e in engines}
        checked = {e: lines.line_check(pages, lines.served_answers(urls[e], NAME, pngs, True)) for e in engines}
        for e, result in checked.items():
            print(f"lines, {e}: {result['matched']}/{result['lines']} identical", flush=True)
        for i in range(args.rounds):
            ordered = urls if i % 2 == 0 else dict(reversed(list(urls.items())))
            rows = load.levels(ordered, NAME, payloads, levels, args.duration, args.warmup)
            rounds.append(rows)
            print(
                f"round {i + 1}: "
                + "; ".join(
                    f"{r['clients']} clients " + ", ".join(f"{e} {r[e].get('req_per_s')}" for e in engines)
                    for r in rows
                ),
                flush=True,
            )
    summary = median_ratios(rounds, engines)
    for level in summary:
        print(
            f"{level['clients']:>3} clients: "
            + ", ".join(f"{e} {level[e]} req/s" for e in engines)
            + "; "
            + ", ".join(f"{e}/{engines[0]} {level[f'{e}/{engines[0]}']}x" for e in engines[1:]),
            flush=True,
        )
    key = f"{engines[1]}/{engines[0]}"
    print(
        f"RATIO served OCR on 2 cores, requests/s {key}: "
        + ", ".join(f"{level[key]}x at {level['clients']}" for level in summary)
        + " clients",
        flush=True,
    )
    doc = {"engines": engines, "cpus": cpus, "levels": levels, "rounds": rounds, "lines": checked, "summary": summary}
    print(f"results: {write_result(RESULT, doc)}", flush=True)
    return 0 if all(r["ok"] for r in checked.values()) else 1


if __name__ == "__main__":
    run_main(main)
