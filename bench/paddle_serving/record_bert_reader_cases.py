"""Record what Paddle Serving 0.9's own ``ChineseBertReader`` (and the ``FullTokenizer`` under it) answers on
seeded random texts, for tests/unit/test_paddle_serving_bert_reader.py to hold ours
(serving/paddle_serving/reader/bert.py) to. It runs itself in the reference venv (bench/lib/paddle_serving_venv.py),
from the repository root:

    python -m bench.paddle_serving.record_bert_reader_cases

and writes tests/data/paddle_serving/bert_reader_cases.json: the vocabularies (the ERNIE vocabulary of
pipelines/ernie_fields by its path; a small one with ``token<TAB>id`` lines written out in full), and per case the
vocabulary, ``max_seq_len``, the text (or its UTF-8 bytes, hex, some invalid) and what ``process`` returned or
raised, with ``FullTokenizer.tokenize``'s tokens.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile

OUT = os.path.join("tests", "data", "paddle_serving", "bert_reader_cases.json")
ERNIE_VOCAB = os.path.join("pipelines", "ernie_fields", "model", "vocab.txt")
SEED = 20261206
#: a vocabulary in the ``token<TAB>id`` form, with spaces around a token and a line that ends the reading
TABBED_VOCAB = (
    "[PAD]\t0\n[UNK]\t1\n[CLS]\t2\n[SEP]\t3\n[MASK]\t4\n  un \t5\n##aff\t6\n##able\t7\nhello\t8\n,\t9\n"
    "中\t10\n##国\t11\n国\t12\nbreak\there\tnow\nafter\t14\n"
)
#: characters the texts are drawn from beside the vocabulary's own tokens
EXTRA = (
    list("abcXYZ019 ,.!?;:'\"()[]{}<>@#$%^&*_-+=~`|\\/")
    + list("。，！？；：“”‘’、《》（）【】…—·")
    + list("éÉüÜñÑçÅøßẞİıǅﬁＡｂｃ１２")
    + ["\u0301", "\u0308", "\u200b", "\u200d", "\ufeff", "\x00", "\x07", "\x1f", "\x85", "\ufffd"]
    + ["\t", "\n", "\r", "\u3000", "\xa0", "\u2028", "\u2009", "  "]
    + ["\U00020000", "\U0002b740", "\U0002b820", "\U0002b900", "\U0002ceaf", "\uf900", "\u3400", "\u4e00", "\u9fff"]
    + ["😀", "™", "€", "∑", "θ", "ū", "ì", "\U000e0001", "\ud7ff"]
)
MAX_SEQ_LENS = (128, 20, 8, 3, 2, 1, 0)


def texts(vocab_tokens: list[str], rng: random.Random) -> list[str]:
    out = ["", " ", "中国", "Hello, World!", "unaffable", "x" * 101, "ab" * 60, "中" * 200]
    for _ in range(150):
        parts = []
        for _ in range(rng.randint(1, 30)):
            pick = rng.random()
            if pick < 0.45:
                parts.append(rng.choice(vocab_tokens).removeprefix("##"))
            elif pick < 0.75:
                parts.append(rng.choice(EXTRA))
            else:
                parts.append(" ")
        out.append("".join(parts))
    return out


def record() -> dict:
    from paddle_serving_app.reader import ChineseBertReader
    from paddle_serving_app.reader.tokenization import FullTokenizer

    rng = random.Random(SEED)
    with open(ERNIE_VOCAB, encoding="utf-8") as f:
        ernie_tokens = [line.rstrip("\n") for line in f]
    tmp = tempfile.mkdtemp(prefix="bert-vocab-")
    tabbed = os.path.join(tmp, "vocab.txt")
    with open(tabbed, "w", encoding="utf-8") as f:
        f.write(TABBED_VOCAB)
    vocabs = {"ernie": ERNIE_VOCAB, "tabbed": tabbed}
    cases = []
    for name, path in vocabs.items():
        tokenizer = FullTokenizer(vocab_file=path)
        pool = ernie_tokens if name == "ernie" else ["un", "aff", "able", "hello", "中", "国", "after"]
        for text in texts(pool, rng):
            max_seq_len = rng.choice(MAX_SEQ_LENS)
            sent: str | bytes = text
            if rng.random() < 0.2:  # bytes, as the example sends them; some not valid UTF-8
                sent = text.encode("utf-8") + (b"\xff\xfe" if rng.random() < 0.5 else b"")
            case = {"vocab": name, "max_seq_len": max_seq_len}
            case.update({"hex": sent.hex()} if isinstance(sent, bytes) else {"text": sent})
            case["tokens"] = tokenizer.tokenize(sent)
            try:
                case["process"] = ChineseBertReader({"vocab_file": path, "max_seq_len": max_seq_len}).process(sent)
            except Exception as exc:  # noqa: BLE001 - what the real one raises is the answer
                case["error"] = f"{type(exc).__name__}: {exc}"
            cases.append(case)
    return {"vocabs": {"ernie": ERNIE_VOCAB, "tabbed": TABBED_VOCAB}, "cases": cases}


def main() -> int:
    if "--in-reference" in sys.argv:
        with open(OUT, "w", encoding="utf-8") as f:
            json.dump(record(), f, ensure_ascii=False, indent=0)
            f.write("\n")
        return 0
    from bench.lib.paddle_serving_venv import ensure_venv

    python, _ = ensure_venv()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    command = [python, "-m", "bench.paddle_serving.record_bert_reader_cases", "--in-reference"]
    subprocess.run(command, check=True, env=env)
    with open(OUT, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    print(f"{len(cases)} cases, {sum('error' in c for c in cases)} errors -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
