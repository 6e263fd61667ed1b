"""Read rendered field pages with our own OCR pipeline, for the field classifier.

    python -m tests.support.make_field_lines lines      # recipes/ernie_fields/ocr_lines.tsv
    python -m tests.support.make_field_lines fixtures   # tests/data/fields/pages/ + truth.json

``lines`` renders the training field pages (``field_pages.TRAIN_SEED``),
serves ``configs/ocr.yml`` and reads every page through it; each OCR line on a
ground-truth line becomes a training line with that line's field type:
``label<TAB>what OCR read<TAB>what was rendered``. The classifier's build
(``python -m recipes.ernie_fields.build``) trains on them beside the
generated lines, so it learns the text its upstream op really produces.

``fixtures`` writes the small fixed evaluation set of the tests: pages of the
evaluation seed and of the hand-written and blind lines, as JPEG (what the
tests send), with each line's text, box and field in ``truth.json``.

Both need the fonts of ``page_set.FACES`` (``apt-get install fonts-wqy-zenhei
fonts-dejavu-extra``). The output depends on the fonts and on the OCR
engine's arithmetic (OpenVINO's kernels for this CPU), which is why it is
committed rather than made on every build.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

from tests.support.field_pages import (
    BLIND,
    BLIND2,
    EVAL_SEED,
    FIELD_PAGES_VERSION,
    TRAIN_SEED,
    field_pages,
    handwritten_pages,
)
from tests.support.page_set import missing_faces

log = logging.getLogger("tests.support.make_field_lines")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINES_PATH = os.path.join(ROOT, "recipes", "ernie_fields", "ocr_lines.tsv")
FIXTURES_DIR = os.path.join(ROOT, "tests", "data", "fields")
TRAIN_PAGES = 800
FIXTURE_PAGES = 24  # generated evaluation pages in the fixed test set


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def make_lines(out: str, pages: int) -> None:
    from client.pipeline_client import PipelineClient
    from tests.support.field_eval import read_pages
    from tests.support.server_process import ServerProcess

    t0 = time.time()
    with ServerProcess(os.path.join(ROOT, "configs", "ocr.yml")) as srv, PipelineClient(srv.url, timeout=300) as c:
        readings = read_pages(c, "ocr", field_pages(TRAIN_SEED, pages))
    rows = [(line.label, _clean(line.text), line.truth) for r in readings for line in r.lines if _clean(line.text)]
    misread = sum(text != truth for _, text, truth in rows)
    with open(out, "w", encoding="utf-8") as f:
        f.write(
            f"# {len(rows)} lines of {pages} field pages (seed {TRAIN_SEED}, field pages v{FIELD_PAGES_VERSION}) "
            f"read by configs/ocr.yml; {misread} read otherwise than rendered.\n"
            "# Made by: python -m tests.support.make_field_lines lines\n"
            "# label<TAB>what OCR read<TAB>what was rendered\n"
        )
        for row in rows:
            f.write("\t".join(row) + "\n")
    log.info("wrote %s: %d lines, %d misread (%.0f s)", out, len(rows), misread, time.time() - t0)


def make_fixtures(out_dir: str, pages: int) -> None:
    import cv2

    sets = {
        "generated": list(field_pages(EVAL_SEED, pages)),
        "handwritten": handwritten_pages(),
        "blind": handwritten_pages(BLIND),
        "blind2": handwritten_pages(BLIND2),
    }
    os.makedirs(os.path.join(out_dir, "pages"), exist_ok=True)
    truth: dict[str, list[dict]] = {}
    for name, set_pages in sets.items():
        truth[name] = []
        for page in set_pages:
            rel = f"pages/{name}-{page.name}.jpg"
            ok, buf = cv2.imencode(".jpg", page.image, [cv2.IMWRITE_JPEG_QUALITY, 75])
            if not ok:
                raise RuntimeError(f"cannot encode {rel}")
            with open(os.path.join(out_dir, rel), "wb") as f:
                f.write(buf.tobytes())
            lines = [{"text": ln.text, "label": ln.label, "box": ln.box} for ln in page.lines]
            truth[name].append({"name": page.name, "image": rel, "lines": lines})
    with open(os.path.join(out_dir, "truth.json"), "w", encoding="utf-8") as f:  # a page per line: diffs stay readable
        sets = ",\n".join(
            f"  {json.dumps(name)}: [\n"
            + ",\n".join(f"    {json.dumps(p, ensure_ascii=False)}" for p in pages)
            + "\n  ]"
            for name, pages in truth.items()
        )
        f.write(f'{{"field_pages_version": {FIELD_PAGES_VERSION}, "sets": {{\n{sets}\n}}}}\n')
    log.info("wrote %s: %s", out_dir, {k: len(v) for k, v in truth.items()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("lines", "fixtures"))
    ap.add_argument("--pages", type=int, help=f"pages (default: lines {TRAIN_PAGES}, fixtures {FIXTURE_PAGES})")
    ap.add_argument("--out", help="output file (lines) or directory (fixtures)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if missing_faces():
        log.error("fonts missing: %s (apt-get install fonts-wqy-zenhei fonts-dejavu-extra)", missing_faces())
        return 2
    if args.what == "lines":
        make_lines(args.out or LINES_PATH, args.pages or TRAIN_PAGES)
    else:
        make_fixtures(args.out or FIXTURES_DIR, args.pages or FIXTURE_PAGES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
