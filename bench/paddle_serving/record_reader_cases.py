"""Record what Paddle Serving 0.9's own ``paddle_serving_app.reader`` classes answer on seeded random inputs, for
tests/unit/test_paddle_serving_reader.py to hold ours (serving/paddle_serving/reader) to.

Run it in a venv of its own (Paddle Serving 0.9 no longer installs as published on Python 3.11; the reader
needs only these; numpy below 2.3, where its ``np.fromstring`` still reads bytes), from the repo root:

    python3.11 -m venv /tmp/ps-venv
    /tmp/ps-venv/bin/pip install --no-deps paddle-serving-app==0.9.0
    /tmp/ps-venv/bin/pip install "numpy<2.3" "opencv-python-headless<5" pyclipper shapely sentencepiece six pillow
    KEYS=$(python -c 'import serving.paddle_serving.reader.char_dict as d; print(d.bundled_ppocr_keys())')
    PYTHONPATH=$PWD /tmp/ps-venv/bin/python -m bench.paddle_serving.record_reader_cases --char-dict "$KEYS"

(recorded with numpy 2.2.6, opencv-python-headless 4.14.0.94, pyclipper 1.4.0, shapely 2.2.0). It writes
tests/data/paddle_serving/reader_cases.npz (arrays) and reader_cases.json (each case: the class, its arguments,
the method, the inputs and the answer, arrays named by their key in the .npz; an exception by its type).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

OUT_DIR = os.path.join("tests", "data", "paddle_serving")
SEED = 20260
CHAR_DICT = "@ppocr_keys_v1.txt"
"""In a case's arguments: the dictionary's path on the machine that runs it."""
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
DB_PARAMS = [
    {"thresh": 0.3, "box_thresh": 0.6, "max_candidates": 1000, "unclip_ratio": 1.5, "min_size": 3},
    {"thresh": 0.5, "box_thresh": 0.3, "max_candidates": 4, "unclip_ratio": 2.0},
    {"thresh": 0.2, "box_thresh": 0.5, "max_candidates": 1000, "unclip_ratio": 1.0},
]


class Recorder:
    """Cases as JSON with their arrays in one .npz, each array stored once. A value is tagged JSON, so dtypes and
    container types survive: ``{"a": key}`` an array, ``{"s": key}`` a numpy scalar, ``{"b": {"a": key}}`` bytes
    (as uint8), ``{"t": [...]}`` a tuple, ``{"l": [...]}`` a list, ``{"d": {...}}`` a dict, ``{"v": x}`` None,
    a bool, a number or a string."""

    def __init__(self, char_dict: str) -> None:
        self.char_dict = char_dict
        self.arrays: dict[str, np.ndarray] = {}
        self.keys: dict[str, str] = {}  # an array's content hash -> its key: each array stored once
        self.cases: list[dict[str, Any]] = []

    def encode(self, value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            array = np.asarray(value)
            digest = hashlib.sha256(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()
            key = self.keys.setdefault(digest, f"a{len(self.keys)}")
            self.arrays[key] = array
            return {"s": key} if isinstance(value, np.generic) else {"a": key}
        if isinstance(value, bytes):
            return {"b": self.encode(np.frombuffer(value, np.uint8))}
        if isinstance(value, tuple):
            return {"t": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return {"l": [self.encode(v) for v in value]}
        if isinstance(value, dict):
            return {"d": {k: self.encode(v) for k, v in value.items()}}
        if value is None or isinstance(value, bool | int | float | str):
            return {"v": value}
        raise TypeError(f"cannot record {type(value)}")

    def record(
        self,
        cls: str,
        args: list[Any],
        inputs: list[Any],
        method: str = "__call__",
        kwargs: dict[str, Any] | None = None,
        call_kwargs: dict[str, Any] | None = None,
        file_input: bool = False,
        after: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        """Run ``cls(*args, **kwargs).method(*inputs, **call_kwargs)`` on the real classes and keep the answer
        (or the exception's type). ``file_input``: the first input is bytes written to a file whose path is
        passed. ``after``: also keep what it returns of the inputs after the call (for in-place changes)."""
        import paddle_serving_app.reader as real

        kwargs = kwargs or {}
        call_kwargs = call_kwargs or {}
        case: dict[str, Any] = {
            "id": f"{cls}.{method}#{len(self.cases)}",
            "cls": cls,
            "args": self.encode(args),
            "kwargs": self.encode(kwargs),
            "method": method,
            "inputs": self.encode(inputs),
            "call_kwargs": self.encode(call_kwargs),
            "file_input": file_input,
        }
        call_inputs = [_deep_copy(v) for v in inputs]
        path = None
        try:
            if file_input:
                fd, path = tempfile.mkstemp(suffix=".img")
                with os.fdopen(fd, "wb") as f:
                    f.write(call_inputs[0])
                call_inputs[0] = path
            obj = build(real, cls, args, {k: self.char_dict if v == CHAR_DICT else v for k, v in kwargs.items()})
            answer = getattr(obj, method)(*call_inputs, **call_kwargs)
            case["output"] = self.encode(answer)
        except Exception as exc:  # noqa: BLE001 (the real class's exception is what is recorded)
            case["raises"] = type(exc).__name__
        finally:
            if path is not None:
                os.unlink(path)
        if after is not None:
            case["after"] = self.encode(after(call_inputs))
        self.cases.append(case)

    def save(self, out_dir: str) -> None:
        os.makedirs(out_dir, exist_ok=True)
        np.savez_compressed(os.path.join(out_dir, "reader_cases.npz"), **self.arrays)
        with open(os.path.join(out_dir, "reader_cases.json"), "w", encoding="utf-8") as f:
            json.dump(
                {"seed": SEED, "versions": versions(), "cases": self.cases},
                f,
                ensure_ascii=False,
                separators=(",", ":"),
            )
            f.write("\n")


def versions() -> dict[str, str]:
    """The versions the answers were recorded with (OpenCV's matters: its warps differ by a few levels across
    major versions)."""
    from importlib.metadata import version

    return {
        name: version(name)
        for name in ("paddle-serving-app", "numpy", "opencv-python-headless", "pyclipper", "shapely")
    }


def _deep_copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    return value


def build(module: Any, cls: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``module.cls(*args, **kwargs)``; a (Detection)Sequential's one argument ``{"chain": [[name, args], ...]}``
    is the list of those transforms, built from the same module (String2Image: from its image_reader)."""
    if args and isinstance(args[0], dict) and "chain" in args[0]:
        args = [[build(module, name, list(chain_args), {}) for name, chain_args in args[0]["chain"]]]
    if not hasattr(module, cls):
        module = module.image_reader
    return getattr(module, cls)(*args, **kwargs)


# ----- inputs -----


def random_image(rng: np.random.Generator, h: int, w: int, noise: int = 256) -> np.ndarray:
    """A few flat shapes over a background, plus noise of ``noise`` levels (256: the whole range), so resizing
    and JPEG see edges as well as noise (and the fixture stays small where the noise is low)."""
    img = np.full((h, w, 3), rng.integers(0, 256 - noise + 1, 3), dtype=np.uint8)
    for _ in range(int(rng.integers(0, 4))):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        x1, y1 = int(rng.integers(x0, w + 1)), int(rng.integers(y0, h + 1))
        img[y0:y1, x0:x1] = rng.integers(0, 256 - noise + 1, 3, dtype=np.uint8)
    return img + rng.integers(0, noise, (h, w, 3), dtype=np.uint8)


IMAGE_SIZES = [(1, 1), (5, 7), (17, 9), (32, 32), (31, 64), (64, 31), (45, 23), (2, 50), (50, 3), (37, 19)]


def prob_map(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A DB probability map: low noise, and text-like blobs (rotated rectangles, ellipses, thin lines, specks)
    of high values, some touching the border."""
    m = (rng.integers(0, 16, (h, w)) / 64).astype(np.float32)
    for _ in range(int(rng.integers(0, 9))):
        value = float(rng.uniform(0.35, 1.0))
        mask = np.zeros((h, w), np.uint8)
        kind = int(rng.integers(0, 4))
        cx, cy = float(rng.uniform(-2, w + 2)), float(rng.uniform(-2, h + 2))
        if kind == 0:
            rect = ((cx, cy), (float(rng.uniform(3, w * 0.8)), float(rng.uniform(3, 14))), float(rng.uniform(-40, 40)))
            cv2.fillPoly(mask, [np.round(cv2.boxPoints(rect)).astype(np.int32)], 1)
        elif kind == 1:
            axes = (int(rng.integers(2, max(3, w // 3))), int(rng.integers(2, 9)))
            cv2.ellipse(mask, (int(cx), int(cy)), axes, float(rng.uniform(0, 180)), 0, 360, 1, -1)
        elif kind == 2:
            p0 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
            p1 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
            cv2.line(mask, p0, p1, 1, int(rng.integers(1, 4)))
        else:
            mask[int(cy) % h, int(cx) % w] = 1
        noise = (rng.integers(0, 16, (h, w)) / 100).astype(np.float32)
        m = np.where(mask > 0, np.clip(value - noise, 0, 1), m).astype(np.float32)
    return m


def random_quads(rng: np.random.Generator, h: int, w: int, n: int) -> np.ndarray:
    """Quadrilaterals around and past an h x w image, some degenerate (a point, a line, repeated corners)."""
    quads = []
    for _ in range(n):
        kind = int(rng.integers(0, 6))
        if kind == 0:
            quads.append(np.repeat(rng.uniform(-5, max(h, w) + 5, (1, 2)), 4, axis=0))
        elif kind == 1:
            p = rng.uniform(-5, max(h, w) + 5, (2, 2))
            quads.append(np.array([p[0], p[1], p[1], p[0]]))
        else:
            rect = (
                (float(rng.uniform(-5, w + 5)), float(rng.uniform(-5, h + 5))),
                (float(rng.uniform(1, w)), float(rng.uniform(1, h))),
                float(rng.uniform(-60, 60)),
            )
            quads.append(cv2.boxPoints(rect)[rng.permutation(4)])
    return np.array(quads, dtype=np.float32).reshape(-1, 4, 2)


def crop_box(rng: np.random.Generator, h: int, w: int, integral: bool) -> np.ndarray:
    """A clockwise box (top-left first) well inside an h x w image, as FilterBoxes gives them."""
    while True:
        rect = (
            (float(rng.uniform(w * 0.3, w * 0.7)), float(rng.uniform(h * 0.3, h * 0.7))),
            (float(rng.uniform(4, w * 0.6)), float(rng.uniform(3, h * 0.6))),
            float(rng.uniform(-30, 30)),
        )
        pts = cv2.boxPoints(rect)
        if integral:
            pts = np.floor(pts)
        pts = np.clip(pts, 0, [w - 1, h - 1]).astype(np.float32)
        xs = pts[np.argsort(pts[:, 0])]
        left, right = xs[:2][np.argsort(xs[:2, 1])], xs[2:][np.argsort(xs[2:, 1])]
        box = np.array([left[0], right[0], right[1], left[1]], dtype=np.float32)
        edges_long_enough = np.linalg.norm(box[0] - box[1]) >= 1 and np.linalg.norm(box[0] - box[3]) >= 1
        if (
            edges_long_enough
            and int(box[:, 0].max()) > int(box[:, 0].min())
            and int(box[:, 1].max()) > int(box[:, 1].min())
        ):
            return box


def rec_probs(rng: np.random.Generator, n: int, t: int, c: int, blank: int) -> np.ndarray:
    """Rec model probabilities (n x t x c) of low entropy (so they compress): a background of two small values,
    one best class per step (often the blank, often repeated), sometimes tied with a second class."""
    probs = (rng.integers(1, 3, (n, t, c)) * 1e-4).astype(np.float32)
    best = rng.integers(0, c, (n, t))
    best = np.where(rng.random((n, t)) < 0.3, blank, best)
    for i in range(n):
        for j in range(1, t):
            if rng.random() < 0.25:
                best[i, j] = best[i, j - 1]
    values = rng.uniform(0.05, 1.0, (n, t)).astype(np.float32)
    for i in range(n):
        for j in range(t):
            probs[i, j, best[i, j]] = values[i, j]
            if rng.random() < 0.1:
                probs[i, j, int(rng.integers(0, c))] = values[i, j]
    return probs


# ----- cases -----


def image_cases(rec: Recorder, rng: np.random.Generator) -> None:
    images = [random_image(rng, h, w, noise=256 if h * w < 200 else 16) for h, w in IMAGE_SIZES]
    floats = [(img / 255.0).astype(np.float32) for img in images]
    for img, fimg in zip(images, floats):
        rec.record("Div", [255], [img])
        rec.record("Div", [127.5], [img])
        rec.record("Normalize", [MEAN, STD], [fimg])
        rec.record("Normalize", [MEAN, STD, True], [np.ascontiguousarray(fimg.transpose(2, 0, 1))])
        rec.record("Normalize", [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], [img])
        rec.record("Transpose", [(2, 0, 1)], [img])
        rec.record("RGB2BGR", [], [img])
        rec.record("BGR2RGB", [], [img])
        for size in (16, 7, (20, 11), (3, 40)):
            rec.record("Resize", [size], [img])
        rec.record("Resize", [16], [img], kwargs={"max_size": 20})
        rec.record("Resize", [12, 2147483647, cv2.INTER_CUBIC], [img])
        rec.record("Resize", [12], [img], kwargs={"interpolation": cv2.INTER_NEAREST})
        rec.record("Resize", [(9, 9)], [fimg], kwargs={"max_size": 5})
        for size in (1, 4, 8, 40):
            rec.record("CenterCrop", [size], [img])
        for factor, max_side in ((32, 960), (8, 40), (16, 48), (4, 30), (32, 2400), (64, 60)):
            rec.record("ResizeByFactor", [factor, max_side], [img])
        rec.record("ResizeByFactor", [], [img])
        rec.record("PadStride", [32], [np.ascontiguousarray(fimg.transpose(2, 0, 1))])
        rec.record("PadStride", [0], [np.ascontiguousarray(fimg.transpose(2, 0, 1))])
        rec.record("DetectionPadStride", [7], [np.ascontiguousarray(fimg.transpose(2, 0, 1)), {}])
        rec.record("DetectionPadStride", [], [np.ascontiguousarray(fimg.transpose(2, 0, 1)), {}])
        rec.record("DetectionBGR2RGB", [], [img, {"k": 1}])
        rec.record("DetectionTranspose", [(2, 0, 1)], [img, None])
        rec.record("DetectionNormalize", [MEAN, STD], [img, {}])
        rec.record("DetectionNormalize", [MEAN, STD, False], [fimg.copy(), None])
        for target, keep in ((40, True), ([30, 50], True), ([20, 17], False), (9, False)):
            rec.record("DetectionResize", [target, keep], [img, {}])
        rec.record("DetectionResize", [[20, 30]], [img, None], kwargs={"interpolation": cv2.INTER_AREA})
    det_chain = [
        ("ResizeByFactor", [32, 960]),
        ("Div", [255]),
        ("Normalize", [MEAN, STD]),
        ("Transpose", [(2, 0, 1)]),
    ]
    cls_chain = [
        ("Resize", [16]),
        ("CenterCrop", [16]),
        ("RGB2BGR", []),
        ("Transpose", [(2, 0, 1)]),
        ("Div", [255]),
        ("Normalize", [MEAN, STD, True]),
    ]
    det2_chain = [
        ("DetectionResize", [[32, 48], False]),
        ("DetectionNormalize", [MEAN, STD, True]),
        ("DetectionTranspose", [(2, 0, 1)]),
        ("DetectionPadStride", [32]),
    ]
    for img in images[3:]:
        rec.record("Sequential", [{"chain": det_chain}], [img])
        rec.record("Sequential", [{"chain": cls_chain}], [img])
        rec.record("DetectionSequential", [{"chain": det2_chain}], [img])


def decode_cases(rec: Recorder, rng: np.random.Generator) -> None:
    for h, w in IMAGE_SIZES[1:7]:
        img = random_image(rng, h, w)
        for ext in (".png", ".jpg", ".bmp"):
            data = cv2.imencode(ext, img)[1].tobytes()
            rec.record("File2Image", [], [data], file_input=True)
            rec.record("String2Image", [], [data])
            rec.record("Base64ToImage", [], [base64.b64encode(data)])
            rec.record("Base64ToImage", [], [base64.b64encode(data).decode("ascii")])
            rec.record("DetectionFile2Image", [], [data, {}], file_input=True)
            rec.record("ImageReader", [[3, 16, 16], MEAN, STD, 20], [data], method="process_image")
    gray = cv2.imencode(".png", rng.integers(0, 256, (9, 13), dtype=np.uint8))[1].tobytes()
    rec.record("File2Image", [], [gray], file_input=True)
    rec.record("Base64ToImage", [], [base64.b64encode(gray)])
    for junk in (b"not an image", bytes(rng.integers(0, 256, 64, dtype=np.uint8)), b""):
        rec.record("File2Image", [], [junk], file_input=True)
        rec.record("Base64ToImage", [], [base64.b64encode(junk)])
        rec.record("ImageReader", [], [junk], method="process_image")


def box_cases(rec: Recorder, rng: np.random.Generator) -> None:
    import paddle_serving_app.reader as real

    det_boxes: list[tuple[Any, tuple[int, int]]] = []
    for case in range(20):
        n = int(rng.integers(1, 3))
        h, w = int(rng.integers(20, 81)), int(rng.integers(20, 101))
        pred = np.stack([prob_map(rng, h, w) for _ in range(n)])[:, np.newaxis]
        ratios = [[float(rng.uniform(0.3, 2.0)), float(rng.uniform(0.3, 2.0))] for _ in range(n)]
        params = DB_PARAMS[case % len(DB_PARAMS)]
        rec.record("DBPostProcess", [params], [pred, ratios])
        for boxes, (ratio_h, ratio_w) in zip(real.DBPostProcess(params)(pred, ratios), ratios):
            det_boxes.append((boxes, (int(h / ratio_h), int(w / ratio_w))))
    rec.record("DBPostProcess", [DB_PARAMS[0]], [np.zeros((1, 1, 16, 16), np.float32), [[1.0, 1.0]]])
    filtered = []
    for boxes, shape in det_boxes:
        rec.record("FilterBoxes", [10, 10], [boxes, list(shape)])
        rec.record("FilterBoxes", [2, 1], [boxes, shape])
        kept = real.FilterBoxes(2, 1)(boxes, shape)
        if len(kept):
            filtered.append(kept)
    for _ in range(20):
        h, w = int(rng.integers(10, 80)), int(rng.integers(10, 80))
        quads = random_quads(rng, h, w, int(rng.integers(1, 9)))
        rec.record("FilterBoxes", [int(rng.integers(0, 6)), int(rng.integers(0, 6))], [quads, (h, w)])
        rec.record("FilterBoxes", [0, 0], [quads.round().astype(np.int16), (h, w)])
        filtered.append(real.FilterBoxes(0, 0)(quads, (h, w)))
    rec.record("SortedBoxes", [], [np.zeros((0, 4, 2), np.float32)])
    for boxes in filtered:
        if boxes.ndim == 3:
            rec.record("SortedBoxes", [], [boxes])
    for _ in range(10):
        n = int(rng.integers(2, 9))
        first = np.stack([rng.integers(0, 60, n), rng.integers(0, 30, n)], axis=1).astype(np.float32)
        boxes = np.repeat(first[:, np.newaxis], 4, axis=1) + rng.integers(0, 20, (n, 4, 2)).astype(np.float32)
        boxes[:, 0] = first
        rec.record("SortedBoxes", [], [boxes])
    for i in range(24):
        h, w = int(rng.integers(12, 90)), int(rng.integers(12, 90))
        img = random_image(rng, h, w, noise=256 if i < 3 else 8)
        box = crop_box(rng, h, w, integral=i % 2 == 0)
        rec.record("GetRotateCropImage", [], [img, box], after=lambda inputs: inputs[1])


def ocr_cases(rec: Recorder, rng: np.random.Generator) -> None:
    ch = {"char_dict_path": CHAR_DICT}
    crops = [random_image(rng, int(rng.integers(2, 40)), int(rng.integers(2, 90)), noise=8) for _ in range(9)]
    for img in crops:
        own = img.shape[1] / img.shape[0]
        for ratio in (0.5, own) if len(rec.cases) % 3 else (0.5, 3.7, own):
            rec.record("OCRReader", [], [img, ratio], kwargs=ch, method="resize_norm_img")
        rec.record("OCRReader", [], [img, own], kwargs={**ch, "image_shape": [3, 48, 320]}, method="resize_norm_img")
        rec.record("OCRReader", [], [img, own], kwargs={"char_type": "en"}, method="resize_norm_img")
    for start in range(0, 9, 3):
        rec.record("OCRReader", [], [crops[start : start + 3]], kwargs=ch, method="preprocess")
        rec.record("OCRReader", [], [crops[start : start + 1]], kwargs={"char_type": "en"}, method="preprocess")
    for char_type, classes in (("en", 36), ("ch", 6623)):
        kwargs = ch if char_type == "ch" else {"char_type": char_type}
        for case in range(6):
            lengths = rng.integers(0, 12, int(rng.integers(1, 4)))
            lod = [0, *np.cumsum(lengths).tolist()]
            indices = rng.integers(0, classes + 1, (lod[-1], 1)).astype(np.int64)
            probs = rec_probs(rng, 1, lod[-1], classes + 1, classes)[0]
            outputs = {
                "ctc_greedy_decoder_0.tmp_0": indices,
                "ctc_greedy_decoder_0.tmp_0.lod": lod,
                "softmax_0.tmp_0": probs,
                "softmax_0.tmp_0.lod": lod,
            }
            rec.record("OCRReader", [], [outputs], kwargs=kwargs, method="postprocess")
            rec.record("OCRReader", [], [outputs, True], kwargs=kwargs, method="postprocess")
            if case % 2 and char_type == "en":
                listed = dict(outputs, **{"ctc_greedy_decoder_0.tmp_0": indices.tolist()})
                listed["softmax_0.tmp_0"] = probs.astype(np.float64).tolist()
                rec.record("OCRReader", [], [listed, True], kwargs=kwargs, method="postprocess")
        for case in range(6):
            n, t = int(rng.integers(1, 3)), int(rng.integers(1, 11))
            c = classes + (2 if char_type == "ch" else 1)
            preds = rec_probs(rng, n, t, c, 0)
            rec.record(
                "OCRReader", [], [{"save_infer_model/scale_0.tmp_1": preds}], kwargs=kwargs, method="postprocess_ocrv2"
            )
            if case == 0:
                rec.record(
                    "OCRReader",
                    [],
                    [{"save_infer_model/scale_0.tmp_1": preds}, True],
                    kwargs=kwargs,
                    method="postprocess_ocrv2",
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--char-dict", required=True, help="path of PaddleOCR's ppocr_keys_v1.txt")
    parser.add_argument("--out", default=OUT_DIR)
    args = parser.parse_args()
    import paddle_serving_app.reader  # noqa: F401 (fails here, early, outside the reference venv)

    rec = Recorder(os.path.abspath(args.char_dict))
    rng = np.random.default_rng(SEED)
    image_cases(rec, rng)
    decode_cases(rec, rng)
    box_cases(rec, rng)
    ocr_cases(rec, rng)
    rec.save(args.out)
    raised = sum("raises" in case for case in rec.cases)
    print(f"{len(rec.cases)} cases ({raised} raise), {len(rec.arrays)} arrays -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
