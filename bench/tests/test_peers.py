"""The RapidOCR peers' helpers that need no model, no server and no virtual
environment: accuracy and parity, pool layouts, the environment's pins."""

import pytest

from bench.lib.contenders import Contender
from bench.lib.peers_accuracy import char_accuracy_vs_truth, edit_distance, page_text, same_text_share
from bench.lib.rapidocr_peers import Layout, RapidSpec, parse_layouts
from bench.lib.rapidocr_venv import PINNED, needs_install
from bench.lib.script import BenchError


def test_edit_distance():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == edit_distance("abc", "") == 3
    assert edit_distance("火车站", "火车站") == 0


def test_page_text_joins_lines_without_spaces():
    assert page_text(["a b", " c"]) == "abc"


def test_char_accuracy_counts_edits_over_truth_chars():
    truth = [["hello world", "ab"], ["xyz"]]
    # a space is not a character; a split line costs nothing; one wrong and one missing char
    res = char_accuracy_vs_truth(truth, [["hello", "world", "ab"], ["xz"]])
    assert res == {"chars": 15, "errors": 1, "accuracy": pytest.approx(14 / 15)}
    assert char_accuracy_vs_truth(truth, [[], []])["accuracy"] == 0.0
    with pytest.raises(ValueError):
        char_accuracy_vs_truth(truth, [[]])


def test_same_text_share_matches_in_reading_order():
    ref = [["a", "b", "c"], ["d"]]
    res = same_text_share(ref, [["a", "x", "c"], []])
    assert res == {"lines": 4, "same": 2, "share": 0.5}
    assert same_text_share([[]], [["extra"]])["share"] == 1.0


def test_parse_layouts():
    assert parse_layouts("1x2, 2x1,2x1-unpinned") == [Layout(1, 2), Layout(2, 1), Layout(2, 1, pinned=False)]
    assert str(Layout(2, 1, pinned=False)) == "2x1-unpinned"
    assert Layout(2, 1, pinned=False).args() == ["--pool", "2", "--threads", "1", "--no-pinning"]
    for bad in ("", "2", "0x2", "2x1-fast", "axb"):
        with pytest.raises(BenchError):
            parse_layouts(bad)


def test_rapid_spec_names():
    assert RapidSpec("openvino", "fp32").key == "rapidocr_ov_fp32"
    assert RapidSpec("onnxruntime").title == "RapidOCR-onnxruntime default"


def test_needs_install_wants_the_pins_and_the_server_packages():
    ok = {**PINNED, "flask": "3.0", "waitress": "3.0"}
    assert needs_install(ok) == []
    assert needs_install({**ok, "rapidocr_openvino": "1.4.3", "waitress": None}) == [
        "rapidocr_openvino==1.4.4",
        "waitress",
    ]


def test_contender_pools_its_rounds():
    c = Contender("k", "K", lambda d, w: {"images": int(d * 2), "seconds": d}, lambda s: None, list)
    assert c.rate() is None
    c.measure(2.0, 0.0)
    c.measure(3.0, 0.0)
    assert c.rate() == pytest.approx(2.0) and len(c.rounds) == 2
