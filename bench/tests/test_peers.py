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
    c = Contender("k", "K", lambda d, w: {"images": int(d * 2), "seconds": d}, lambda s: None, lambda n: [])
    assert c.rate() is None
    c.measure(2.0, 0.0)
    c.measure(3.0, 0.0)
    assert c.rate() == pytest.approx(2.0) and len(c.rounds) == 2


def _measured(key: str, rate: float) -> Contender:
    c = Contender(key, key.upper(), lambda d, w: {"images": rate * d, "seconds": d}, lambda s: None, lambda n: [])
    c.measure(1.0, 0.0)
    return c


def test_check_takes_the_faster_peer_and_needs_quality_too():
    from bench.lib.peers_report import Target, check

    by_key = {k: _measured(k, r) for k, r in (("ours", 6.0), ("srv", 3.0), ("loop", 4.0))}
    target = Target("t", "ours", ("srv", "loop", "absent"), 1.3)
    ratio, line = check(target, by_key, True, "q")
    assert ratio == pytest.approx(1.5) and "LOOP" in line and line.endswith("MET")
    assert check(target, by_key, False, "q")[1].endswith("MISSED")
    assert check(Target("t", "gone", ("srv",), 1.3), by_key, True, "q") == (None, "t: n/a (not measured)")


def test_table_has_a_row_per_contender():
    from bench.lib.peers_report import Quality, table

    ours, peer = _measured("ours", 6.0), _measured("peer", 3.0)
    text = table([ours, peer], ours, {"peer": Quality(0.99, 0.995)})
    assert len(text.splitlines()) == 4
    assert "2.00x" in text.splitlines()[3] and "0.990" in text and "n/a" in text.splitlines()[2]
