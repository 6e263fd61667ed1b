"""The Paddle Serving cases of ``tests/data/paddle_serving/cases/`` (issue 36), made
runnable: ``prepare_case(name, dest)`` copies a case folder (a user's
``web_service.py`` + ``config.yml`` + helpers) to ``dest`` and writes beside it the
serving model folders its ``config.yml`` names (built at run time: nothing binary is
committed) and the OCR dictionary the OCR readers open. Used by the recorder of the
real Paddle Serving's answers (``bench/paddle_serving/record_answers.py``) and by
tests that run the same files on batchline.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field

import yaml

from tests.support.paddle_serving import tiny_models
from tests.support.paddle_serving.model_folders import ocr_dictionary, write_ocr_models

CASES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "data", "paddle_serving", "cases")
CASES_DIR = os.path.normpath(CASES_DIR)
ERNIE_VOCAB = os.path.normpath(
    os.path.join(CASES_DIR, "..", "..", "..", "..", "pipelines", "ernie_fields", "model", "vocab.txt")
)


@dataclass(frozen=True)
class Case:
    """``entry``: the script the user runs; ``service``: the name in the HTTP path
    ``/<service>/prediction`` (WebService(name=...) / PipelineServer(name)); ``models``:
    serving folder -> tiny model name, or "ocr_det"/"ocr_rec"; ``dictionary``: where
    ``ppocr_keys_v1.txt`` goes, relative to the case folder; ``vocab``: where a BERT
    ``vocab.txt`` goes (the ERNIE vocabulary of pipelines/ernie_fields); ``subdir``: the case
    folder's place under ``dest`` (PaddleOCR's pdserving sits two levels below the
    repository root, where its ``../../ppocr/utils/ppocr_keys_v1.txt`` points)."""

    name: str
    entry: str = "web_service.py"
    service: str = ""
    models: dict[str, str] = field(default_factory=dict)
    dictionary: str = ""
    vocab: str = ""
    subdir: str = ""


UCI = {"uci_housing_model": "uci"}
CASES = {
    c.name: c
    for c in (
        Case(
            "ocr",
            service="ocr",
            models={"ocr_det_model": "ocr_det", "ocr_rec_model": "ocr_rec"},
            dictionary="ppocr_keys_v1.txt",
        ),
        Case(
            "pdserving",
            service="ocr",
            models={"ppocr_det_v4_serving": "ocr_det", "ppocr_rec_v4_serving": "ocr_rec"},
            dictionary="../../ppocr/utils/ppocr_keys_v1.txt",
            subdir="PaddleOCR/deploy/pdserving",
        ),
        Case("simple_web_service", service="uci", models=UCI),
        Case(
            "imdb_model_ensemble",
            entry="test_pipeline_server.py",
            service="",  # PipelineServer() without a name
            models={"imdb_bow_model": "imdb_bow", "imdb_cnn_model": "imdb_cnn"},
        ),
        Case("thread_ops", service="uci", models=UCI),
        Case("process_ops", service="uci", models=UCI),
        Case("auto_batching", service="uci", models=UCI),
        Case("skip_process", service="skip", models=UCI),
        Case("prod_errors", service="check"),
        Case("no_model", service="nomodel"),
        Case("custom_request_response", service="custom"),
        Case("two_inputs", service="join", models=UCI),
        Case("tensor_inputs", service="tensors"),
        Case("bert", service="bert", models={"bert_seq128_model": "bert"}, vocab="vocab.txt"),
    )
}


def ports(case_dir: str) -> tuple[int, int]:
    """(rpc_port, http_port) of a case folder's config.yml."""
    with open(os.path.join(case_dir, "config.yml"), encoding="utf-8") as f:
        conf = yaml.safe_load(f)
    return int(conf["rpc_port"]), int(conf["http_port"])


def prepare_case(name: str, dest: str, python: str = sys.executable) -> str:
    """Copy case ``name`` under ``dest`` and write its model folders and dictionary;
    returns the case folder to run ``entry`` in. ``python`` builds the tiny models
    (any interpreter with paddle: the main one or the reference venv's)."""
    case = CASES[name]
    target = os.path.join(dest, case.subdir or name)
    shutil.copytree(os.path.join(CASES_DIR, name), target)
    ocr = {folder for folder, model in case.models.items() if model.startswith("ocr_")}
    if ocr:
        det = next(f for f, m in case.models.items() if m == "ocr_det")
        rec = next(f for f, m in case.models.items() if m == "ocr_rec")
        write_ocr_models(target, det, rec)
    for folder, model in case.models.items():
        if folder not in ocr:
            tiny_models.write_serving(model, os.path.join(target, folder), python)
    if case.dictionary:
        path = os.path.normpath(os.path.join(target, case.dictionary))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(ocr_dictionary(), path)
    if case.vocab:
        shutil.copyfile(ERNIE_VOCAB, os.path.join(target, case.vocab))
    return target
