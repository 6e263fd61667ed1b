"""serving/service/error_body.py: each route family's error shape; a pipeline may be
called "v2", and its own routes keep their shapes."""

import pytest

from serving.errors import NotFound
from serving.service.error_body import error_document

ERR = NotFound("no such thing")


@pytest.mark.parametrize("path", ["/v2", "/v2/models/ocr", "/v2/models/ocr/versions/2/infer", "/v2/health/ready"])
def test_the_open_inference_protocols_routes_answer_kserves_shape(path):
    assert error_document(path, ERR) == {"error": "no such thing"}


@pytest.mark.parametrize("path", ["/v2/predict", "/v2/v1/predict", "/pipelines", "/ocr/predict"])
def test_other_routes_answer_the_native_shape_a_pipeline_named_v2_too(path):
    assert error_document(path, ERR) == {"error": {"status": 404, "message": "no such thing"}}


@pytest.mark.parametrize("path", ["/v2/prediction", "/ocr/v1/prediction"])
def test_paddle_routes_answer_paddles_shape(path):
    assert error_document(path, ERR, logid=3) == {
        "err_no": 404,
        "err_msg": "no such thing",
        "key": [],
        "value": [],
        "logid": 3,
    }
