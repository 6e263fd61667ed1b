"""The Open Inference Protocol's model core: versions, typed outputs declared by
the final op (:meth:`serving.op.Op.answer_fields`), output tensors of results."""

from __future__ import annotations

import pytest

from ops.ernie import ErnieClsOp
from serving.config import parse_config
from serving.config.file_set import repository_from
from serving.errors import InternalError, NotFound
from serving.service.open_inference.infer import output_tensors
from serving.service.open_inference.model import BYTES, FP32, TensorSpec, model_view, parse_version
from tests.support.client_fakes import ocr_config, text_config


def test_ernie_declares_label_and_score_when_it_classifies_the_request_text():
    assert ErnieClsOp.answer_fields(source=True) == {"label": BYTES, "score": FP32}
    assert ErnieClsOp.answer_fields(source=False) == {}  # after OCR: lines, each with its label


def test_versions():
    assert parse_version("") is None and parse_version("12") == 12
    for text in ("x", "-1", "1.0", "١", "9" * 11):
        with pytest.raises(NotFound):
            parse_version(text)


def repository(*configs):
    return repository_from(
        [f"{i}.yml" for i in range(len(configs))], [(f"{i}.yml", parse_config(c)) for i, c in enumerate(configs)]
    )


def test_a_routed_model_offers_what_every_version_offers():
    labels = {**text_config(name="m"), "version": 1}
    plain = {**ocr_config(name="o")}
    repo = repository(labels, {**text_config(name="m"), "version": 2}, plain)
    assert [o.name for o in model_view(repo, "m", None).outputs] == ["result", "label", "score"]
    assert model_view(repo, "m", 1).versions == (1, 2)
    assert model_view(repo, "o", None).input == TensorSpec("image", BYTES)
    assert [o.name for o in model_view(repo, "o", None).outputs] == ["result"]
    with pytest.raises(NotFound, match="has no version 3"):
        model_view(repo, "m", 3)
    with pytest.raises(NotFound, match="unknown pipeline"):
        model_view(repo, "x", None)


def test_output_tensors_hold_each_rows_json_and_fields():
    results = [{"label": "a", "score": 0.5, "probs": [0.5]}, {"label": "好", "score": 1, "probs": [1.0]}]
    chosen = [TensorSpec("score", FP32), TensorSpec("result", BYTES), TensorSpec("label", BYTES)]
    score, result, label = output_tensors(results, chosen)
    assert score.values == [0.5, 1.0] and score.shape == [2]
    assert result.values == ['{"label":"a","score":0.5,"probs":[0.5]}', '{"label":"好","score":1,"probs":[1.0]}']
    assert label.serialized() == b"\x01\x00\x00\x00a\x03\x00\x00\x00" + "好".encode()


@pytest.mark.parametrize("row", [{"label": 3, "score": 0.5}, {"score": 0.5}, ["line"], {"label": "a", "score": True}])
def test_an_answer_without_its_declared_fields_is_a_server_fault(row):
    with pytest.raises(InternalError):
        output_tensors([row], [TensorSpec("label", BYTES), TensorSpec("score", FP32)])


def test_model_views_are_worked_out_once_per_config_and_anew_after_a_reload():
    from dataclasses import replace

    from serving.service.open_inference.model import ModelViews

    repo = repository({**text_config(name="m"), "version": 1}, {**text_config(name="m"), "version": 2})
    views = ModelViews()
    first = views.get(repo, "m", None)
    assert views.get(repo, "m", None) is first
    assert views.get(repo, "m", 1) == model_view(repo, "m", 1)
    reloaded = replace(repo)  # a reload's new config object
    assert views.get(reloaded, "m", None) is not first and views.get(reloaded, "m", None) == first
    with pytest.raises(NotFound):
        views.get(reloaded, "x", None)
