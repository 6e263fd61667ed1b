"""``ChineseBertReader`` and BERT's ``FullTokenizer`` (serving/paddle_serving/reader/bert.py) against what Paddle
Serving 0.9's own classes answered on the same seeded texts (tests/data/paddle_serving/bert_reader_cases.json,
recorded by bench/paddle_serving/record_bert_reader_cases.py): the tokens, every feed list, and the errors."""

import json
import os

import pytest

from serving.paddle_serving.reader import ChineseBertReader
from serving.paddle_serving.reader.bert import FullTokenizer
from tests.support.server_process import ROOT

pytestmark = pytest.mark.unit

with open(os.path.join(ROOT, "tests", "data", "paddle_serving", "bert_reader_cases.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
    tabbed = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    tabbed.write_text(RECORDED["vocabs"]["tabbed"], encoding="utf-8")
    return {"ernie": os.path.join(ROOT, RECORDED["vocabs"]["ernie"]), "tabbed": str(tabbed)}


def _sent(case):
    return bytes.fromhex(case["hex"]) if "hex" in case else case["text"]


def test_every_recorded_case_answers_as_paddle_serving(vocabs):
    tokenizers = {name: FullTokenizer(path) for name, path in vocabs.items()}
    wrong = []
    for i, case in enumerate(RECORDED["cases"]):
        sent, path = _sent(case), vocabs[case["vocab"]]
        tokens = tokenizers[case["vocab"]].tokenize(sent)
        try:
            got = {"process": ChineseBertReader({"vocab_file": path, "max_seq_len": case["max_seq_len"]}).process(sent)}
        except ValueError as exc:
            got = {"error": f"ValueError: {exc}"}
        want = {k: case[k] for k in ("process", "error") if k in case}
        if tokens != case["tokens"] or got != want:
            wrong.append((i, sent, tokens, case["tokens"], got, want))
    assert len(RECORDED["cases"]) > 300 and wrong == []


def test_the_tabbed_vocabulary_keeps_its_ids_and_stops_at_a_line_of_three_fields(vocabs):
    vocab = FullTokenizer(vocabs["tabbed"]).vocab
    assert vocab["un"] == 5 and vocab["中"] == 10 and "after" not in vocab


def test_without_a_vocabulary_nothing_is_downloaded():
    with pytest.raises(ValueError, match="vocab_file"):
        ChineseBertReader({"max_seq_len": 8})


def test_the_feed_keys_can_be_renamed(vocabs):
    reader = ChineseBertReader({"vocab_file": vocabs["ernie"], "max_seq_len": 4})
    reader.set_feed_keys(["a", "b", "c", "d"])
    assert reader.get_feed_keys() == ["a", "b", "c", "d"]
    assert list(reader.process("中国")) == ["a", "b", "c", "d"]
