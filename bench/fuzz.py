"""Malformed-request fuzz against a real ``batchline serve`` process.

    python -m bench.fuzz --count 1000                      # fake-op image config (model-free)
    python -m bench.fuzz --config configs/ocr.yml --count 1000
    python -m bench.fuzz --url http://127.0.0.1:9999 --count 1000   # a server you started

A deterministic generator (``--seed``) cycles through categories of bad input
on both endpoints -- random bytes as images, truncated PNG/JPEG, 1x1 and
zero-size images, decompression bombs, bodies over ``max_body_size``, wrong
JSON types, missing/extra keys, non-UTF-8, huge key lists, bad options,
unknown pipelines and methods, multipart and raw ``image/*`` bodies. Each
request must get a 4xx with a JSON error message (a few lenient categories may
also answer 200); never a 5xx, never a dropped connection. Afterwards
``/health/ready`` must be 200 and a valid request must answer correctly.
The case table (categories, weights, allowed statuses) is
tests/support/fuzz/cases.py; this script is its command line.

Categories ``json_amplification``, ``bad_logid``, ``multipart_tiny_parts`` and
``alpha_depth_bomb`` are issue 25's hostile traffic (bodies that cost many times
their size, RGBA images of 4-8 bytes a pixel at the pixel limit; see
``bench/hostile.py`` for the same with the server's RSS measured).
Categories ``deep_json``, ``huge_int``, ``option_digits``, ``pixel_bomb_pil_bypass``
and ``pixel_bomb_hdr`` reproduce server bugs this fuzz found (once 500s or full
decodes; fixed, see docs/RELIABILITY.md "Bugs found and fixed"); they are ordinary
categories now and must get a 4xx like the rest. Exit code: 0 when every request
behaved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.support.fuzz.case import Limits
from tests.support.fuzz.report import format_report
from tests.support.fuzz.runner import limits_for, run_fuzz
from tests.support.reliability.target import FAKE, pipeline_info, start_server

# the fake-op server this bench starts by default (limits small enough to probe cheaply)
FAKE_SERVER = {"max_body_size": 4 << 20, "max_inputs_per_request": 8, "max_image_pixels": 4_000_000}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=FAKE, help="config to serve (default: a fake-op image config)")
    ap.add_argument("--url", help="fuzz an already running server instead of starting one")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-heavy",
        action="store_true",
        help="skip the decompression-bomb cases (their bodies are 27 KB-3 MB; before the fixes each cost ~1 GB)",
    )
    ap.add_argument("--valid-image", help="image file for the after-fuzz valid request (default: a generated PNG)")
    ap.add_argument("--json", help="write the report as JSON here")
    args = ap.parse_args(argv)

    server = None
    try:
        if args.url:
            url, pid, config_path = args.url.rstrip("/"), None, None
        else:
            server = start_server(args.config, **FAKE_SERVER)
            url, pid = server.url, server.proc.pid
            config_path = None if args.config == FAKE else args.config
        name, kind = pipeline_info(url)
        if kind != "image":
            print(f"pipeline {name!r} takes {kind!r} input; this fuzz targets image pipelines", file=sys.stderr)
            return 2
        if args.config == FAKE and not args.url:
            limits = Limits(
                max_body_size=FAKE_SERVER["max_body_size"],
                max_inputs=FAKE_SERVER["max_inputs_per_request"],
                max_image_pixels=FAKE_SERVER["max_image_pixels"],
            )
        else:
            limits = limits_for(config_path)
        report = run_fuzz(
            url,
            name,
            limits,
            args.count,
            seed=args.seed,
            heavy=not args.no_heavy,
            pid=pid,
            progress=lambda m: print(m, file=sys.stderr),
            valid_image_path=args.valid_image,
        )
        print(format_report(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report.to_json(), f, indent=1)
        return 0 if report.ok() else 1
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
