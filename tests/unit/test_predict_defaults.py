"""`batchline predict`'s choice of pipeline when ``--pipeline`` is not given, among
the names a server lists (the choice against a real server: tests/integration/
test_client_predict_defaults.py)."""

import pytest

from client.cli import build_parser, pick_pipeline


def test_ocr_when_the_server_runs_it_or_nothing_is_listed():
    assert pick_pipeline(["ocr"]) == "ocr"
    assert pick_pipeline(["ernie", "ocr", "ocr_ernie"]) == "ocr"
    assert pick_pipeline([]) == "ocr"  # the prediction's 404 then names what is wrong


def test_the_only_pipeline_whatever_its_name():
    assert pick_pipeline(["ocr_ernie"]) == "ocr_ernie"


def test_several_without_ocr_is_an_error_naming_them_and_the_option():
    with pytest.raises(ValueError) as info:
        pick_pipeline(["ernie", "ocr_ernie"])
    assert str(info.value) == (
        "the server runs 2 pipelines, none named 'ocr': ernie, ocr_ernie; pick one with --pipeline NAME"
    )


def test_pipeline_and_font_are_not_given_unless_named():
    args = build_parser().parse_args(["--url", "http://x", "a.png"])
    assert args.pipeline is None and args.font is None
    args = build_parser().parse_args(["--url", "http://x", "--pipeline", "ocr", "--font", "f.ttc", "a.png"])
    assert args.pipeline == "ocr" and args.font == "f.ttc"
