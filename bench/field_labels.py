"""Do the OCR -> ERNIE field labels hold on what OCR really reads? (issue 17)

Renders the evaluation field pages (tests/support/field_pages.py, seed
EVAL_SEED: receipt- and form-like pages whose every line has a known field
type, DejaVu and WenQuanYi faces, mild print-and-scan noise), serves the
``configs/repository`` pipelines in one server, and reports label accuracy
per field (tests/support/field_eval.py):

* clean   the rendered text of each line through ``ernie``;
* ocr     every OCR line of ``ocr_ernie``, against the field of the line it lies on;
* misread the OCR lines whose text is not exactly what was rendered.

The same is reported for the lines written by hand in the phrasing of real
documents (tests/data/fields: ``handwritten.tsv``, which guided the generator;
``blind.tsv`` and ``blind2.tsv``, written by authors who saw neither the
generator nor the other sets), rendered the same way; none is trained on.

``--model DIR`` serves another build of the classifier in both pipelines;
``--compare DIR`` (or ``--compare-rev REV``: the one committed at a git
revision) serves a second one after it on the same pages, and prints the
difference. Exit 1 when the served model misses the goal: >= 90% of OCR'd
lines labelled right, on the generated pages and on the held-out blind-2 lines.

    python -m bench.field_labels [--pages 300] [--model DIR] [--compare DIR | --compare-rev REV] [--card] [--json F]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from typing import Any

from bench.lib.configs import load_yaml
from bench.lib.paths import CONFIG_DIR
from bench.lib.results import machine_info, write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served

GOAL_OCR = 0.90
PIPELINES = ("ocr", "ocr_ernie", "ernie")


def repository(model_dir: str | None) -> str:
    """A copy of configs/repository whose ERNIE ops load ``model_dir`` (None: as shipped)."""
    import yaml

    out = tempfile.mkdtemp(prefix="batchline-field-labels-")
    for name in PIPELINES:
        config = load_yaml(os.path.join(CONFIG_DIR, "repository", f"{name}.yml"))
        for op in config["op"].values():
            if model_dir and op.get("class") == "ernie_cls":
                op["local_service_conf"]["model_config"] = os.path.abspath(model_dir)
        with open(os.path.join(out, f"{name}.yml"), "w", encoding="utf-8") as f:
            yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
    return out


def measure(model_dir: str | None, sets: dict[str, list[Any]]) -> dict[str, Any]:
    """Each set of pages through one server of ``model_dir``: {set name: FieldScore}."""
    from client.pipeline_client import PipelineClient
    from tests.support.field_eval import evaluate

    repo = repository(model_dir)
    try:
        with served(repo) as server, PipelineClient(server.url, timeout=300) as client:
            return {name: evaluate(client, pages) for name, pages in sets.items()}
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def print_table(title: str, scores: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from tests.support.field_eval import SETS, table

    t = Table(title=title)
    for head in ("field", *SETS):
        t.add_column(head, justify="left" if head == "field" else "right")
    for row in table(scores):
        t.add_row(*row)
    Console().print(t)
    print(f"  ground-truth lines no OCR line landed on: {scores.missed}; false detections: {scores.extra}")


def model_at_revision(rev: str) -> str:
    """The classifier directory as committed at git revision ``rev``, copied to a temp directory."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = "pipelines/ernie_fields/model"
    try:
        names = subprocess.run(
            ["git", "-C", root, "ls-tree", "--name-only", f"{rev}:{where}"], capture_output=True, check=True, text=True
        ).stdout.split()
        out = tempfile.mkdtemp(prefix=f"batchline-ernie-{rev}-")
        for name in names:
            blob = subprocess.run(["git", "-C", root, "show", f"{rev}:{where}/{name}"], capture_output=True, check=True)
            with open(os.path.join(out, name), "wb") as f:
                f.write(blob.stdout)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BenchError(f"cannot read {where} at {rev}: {exc}") from None
    return out


def write_card_section(by_set: dict[str, Any], pages: int, argv: str) -> None:
    """Replace the evaluation section of the model card with these figures."""
    from recipes.ernie_fields.build import CARD, write_eval_section
    from tests.support.field_eval import SETS, table

    parts = [
        "## On what OCR really reads",
        "",
        f"`python -m bench.field_labels {argv}`: rendered pages (tests/support/field_pages.py) served through",
        "`configs/repository` in one server. **clean**: each line's rendered text through `ernie`; **ocr**: every",
        "OCR line of `ocr_ernie`, against the field of the line it lies on; **misread**: the OCR lines whose text",
        "is not exactly what was rendered (a space dropped, a character confused, a split line's piece).",
        f"*generated*: {pages} pages of generator lines (seed of the evaluation, never trained on); *hand-written*:",
        "tests/data/fields/handwritten.tsv, written while the generator was widened (it guided that work);",
        "*blind*: tests/data/fields/blind.tsv, written by an author who saw neither the generator nor the other set;",
        "its first score (91.7% of OCR'd lines) was blind, then its errors guided a second widening of the generator.",
        "*blind-2*: tests/data/fields/blind2.tsv, by another author who saw none of these, scored on the final model",
        "only (less 14 lines that blind.tsv also has: both authors are sessions of one model).",
    ]
    for name, scores in by_set.items():
        parts += [
            "",
            f"{name} (ground-truth lines missed by OCR: {scores.missed}; false detections: {scores.extra}):",
            "",
        ]
        parts += ["| field | " + " | ".join(SETS) + " |", "|---" * (len(SETS) + 1) + "|"]
        parts += ["| " + " | ".join(row) + " |" for row in table(scores)]
    try:
        write_eval_section("\n".join(parts))
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    print(f"wrote the figures into {CARD}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=300, help="evaluation pages (default 300)")
    ap.add_argument("--start", type=int, default=0, help="first page index of the set")
    ap.add_argument("--model", help="classifier directory to serve (default: the shipped one)")
    ap.add_argument("--compare", help="a second classifier directory, measured on the same pages")
    ap.add_argument(
        "--compare-rev", metavar="REV", help="compare with the classifier shipped at this git revision (e.g. d3662b1)"
    )
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument(
        "--card", action="store_true", help="write the figures into the model card (pipelines/ernie_fields)"
    )
    args = ap.parse_args()

    from tests.support.field_pages import BLIND, BLIND2, EVAL_SEED, FIELD_PAGES_VERSION, field_pages, handwritten_pages
    from tests.support.page_set import missing_faces

    if missing_faces():
        names = ", ".join(f.name for f in missing_faces())
        raise BenchError(f"fonts missing: {names} (apt-get install fonts-wqy-zenhei fonts-dejavu-extra)")
    sets = {
        "generated": list(field_pages(EVAL_SEED, args.pages, args.start)),
        "hand-written": handwritten_pages(),
        "blind": handwritten_pages(BLIND),
        "blind-2": handwritten_pages(BLIND2),
    }
    for name, pages in sets.items():
        print(
            f"{name}: {len(pages)} field pages (seed {EVAL_SEED}, v{FIELD_PAGES_VERSION}), "
            f"{sum(len(p.lines) for p in pages)} lines"
        )
    if args.compare_rev:
        args.compare = model_at_revision(args.compare_rev)
    models = {"served": args.model, **({"compare": args.compare} if args.compare else {})}
    runs = {run: measure(model, sets) for run, model in models.items()}
    for run, by_set in runs.items():
        for name, scores in by_set.items():
            print_table(f"{run} ({models[run] or 'shipped model'}): {name} lines", scores)
    if "compare" in runs:
        for name in sets:
            for which in ("clean", "ocr", "misread"):
                delta = runs["served"][name].accuracy(which) - runs["compare"][name].accuracy(which)
                print(f"  {name} {which}: served - compare = {delta * 100:+.1f} points")
    ocr = runs["served"]["generated"].accuracy("ocr")
    blind = runs["served"]["blind-2"].accuracy("ocr")
    verdict = "met" if min(ocr, blind) >= GOAL_OCR else "missed"
    others = "; ".join(f"{name}: {runs['served'][name].accuracy('ocr'):.1%}" for name in sets if name != "generated")
    print(
        f"label accuracy on OCR'd lines: {others}; generated pages {ocr:.1%} "
        f"(goal >= {GOAL_OCR:.0%} there and on blind-2: {verdict})"
    )
    doc = {
        "pages": {name: len(pages) for name, pages in sets.items()},
        "seed": EVAL_SEED,
        "field_pages_version": FIELD_PAGES_VERSION,
        "runs": {
            run: {"model": models[run], **{name: s.to_dict() for name, s in by_set.items()}}
            for run, by_set in runs.items()
        },
        "machine": machine_info(),
    }
    path = write_result("field_labels", doc)
    ratio = f"RATIO field label accuracy on OCR'd lines: generated {ocr:.3f}, blind-2 {blind:.3f}"
    if "compare" in runs:
        ratio += (
            f" (compare: {runs['compare']['generated'].accuracy('ocr'):.3f}, "
            f"{runs['compare']['blind-2'].accuracy('ocr'):.3f})"
        )
    print(ratio)
    if args.card:
        write_card_section(runs["served"], args.pages, " ".join(sys.argv[1:]))
    if args.json:
        shutil.copyfile(path, args.json)
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    run_main(main)
