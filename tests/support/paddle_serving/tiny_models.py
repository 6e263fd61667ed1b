"""Tiny deterministic Paddle inference models for the Paddle Serving cases (issue 36),
built by recipe (fixed weights, ``paddle.static``, legacy ``.pdmodel`` format) so
nothing binary is committed. The same recipe runs in the main environment and in
the reference Paddle Serving venv (``bench/lib/paddle_serving_venv.py``).

- ``uci``: fit-a-line (uci housing): ``x`` float32 [-1, 13] -> ``price`` [-1, 1]
  (the ``uci_housing_model`` of Paddle Serving's simple_web_service example);
- ``bert``: a stand-in for the BERT pipeline example's ``bert_seq128_model``: ``input_ids``,
  ``position_ids``, ``segment_ids`` int64 and ``input_mask`` float32, each [-1, 128, 1] ->
  ``pooled_output`` [-1, 4] and ``sequence_output`` [-1, 128, 4] (embeddings summed, tanh, masked;
  the first position through a dense layer);
- ``imdb_bow`` / ``imdb_cnn``: stand-ins for the imdb_model_ensemble example's two
  models: ``words`` int64 [-1, 1] (LoD level 1, word ids < ``IMDB_VOCAB``) ->
  ``prediction`` float32 [1, 2] (softmax); bag of words (mean of embeddings) and a
  width-3 convolution with max pooling.

``build(name, out_dir)`` writes ``out_dir/inference.pdmodel`` + ``.pdiparams`` in a
child process (the legacy program format needs ``FLAGS_enable_pir_api=0`` before
paddle is imported); ``write_serving(name, target)`` also writes the serving model
folder (``target/`` = serving_server, ``target + '_client'``) with the aliases the
examples use. ``python -m tests.support.paddle_serving.tiny_models NAME OUT_DIR``.
"""

from __future__ import annotations

import os
import subprocess
import sys

IMDB_VOCAB = 32  # ids 0..31; the case's imdb.vocab has 31 words, unknown = 31
IMDB_EMBED = 8
BERT_VOCAB = 8192  # ids of a vocabulary up to this size (the ERNIE vocabulary the case uses has 7,709)
BERT_SEQ, BERT_HIDDEN = 128, 4

# name -> (feed aliases, fetch aliases) of the serving folder
ALIASES = {
    "bert": (["input_ids", "position_ids", "segment_ids", "input_mask"], ["pooled_output", "sequence_output"]),
    "uci": (["x"], ["price"]),
    "imdb_bow": (["words"], ["prediction"]),
    "imdb_cnn": (["words"], ["prediction"]),
}


def _weights(shape: tuple[int, ...], seed: int):
    """Fixed weights: a smooth deterministic pattern (no RNG), values in [-0.5, 0.5]."""
    import numpy as np

    n = int(np.prod(shape))
    return (np.sin(np.arange(n, dtype=np.float64) * 0.7 + seed) * 0.5).astype("float32").reshape(shape)


def _param(name: str, value):
    import paddle

    return paddle.ParamAttr(name=name, initializer=paddle.nn.initializer.Assign(value))


def _build_in_process(name: str, out_dir: str) -> None:
    import paddle

    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        if name == "uci":
            x = paddle.static.data("x", [None, 13], "float32")
            w = _param("fc_0.w_0", _weights((13, 1), 1))
            b = _param("fc_0.b_0", _weights((1,), 2) + 22.0)
            out = paddle.static.nn.fc(x, 1, weight_attr=w, bias_attr=b)
            feeds = [x]
        elif name in ("imdb_bow", "imdb_cnn"):
            words = paddle.static.data("words", [None, 1], "int64", lod_level=1)
            emb_w = _weights((IMDB_VOCAB, IMDB_EMBED), 3 if name == "imdb_bow" else 4)
            table = paddle.static.create_parameter(
                [IMDB_VOCAB, IMDB_EMBED], "float32", name="emb.w_0", attr=_param("emb.w_0", emb_w)
            )
            emb = paddle.gather(table, paddle.reshape(words, [-1]))  # [L, E]
            if name == "imdb_bow":
                pooled = paddle.mean(emb, axis=0, keepdim=True)  # [1, E]
            else:
                img = paddle.reshape(emb, [1, 1, -1, IMDB_EMBED])  # [1, 1, L, E]
                conv_w = _param("conv.w_0", _weights((4, 1, 3, IMDB_EMBED), 5))
                conv = paddle.static.nn.conv2d(
                    img, 4, (3, IMDB_EMBED), padding=(1, 0), param_attr=conv_w, bias_attr=False
                )
                pooled = paddle.reshape(paddle.max(conv, axis=2), [1, 4])
            width = pooled.shape[-1]
            w = _param("fc_0.w_0", _weights((width, 2), 6 if name == "imdb_bow" else 7))
            b = _param("fc_0.b_0", _weights((2,), 8))
            out = paddle.nn.functional.softmax(paddle.static.nn.fc(pooled, 2, weight_attr=w, bias_attr=b))
            feeds = [words]
        elif name == "bert":
            feeds = [paddle.static.data(n, [None, BERT_SEQ, 1], "int64") for n in ALIASES["bert"][0][:3]]
            feeds.append(paddle.static.data("input_mask", [None, BERT_SEQ, 1], "float32"))
            summed = None
            for i, (feed, rows) in enumerate(zip(feeds, (BERT_VOCAB, BERT_SEQ, 2))):
                weights = _weights((rows, BERT_HIDDEN), 10 + i)
                table = paddle.static.create_parameter(
                    [rows, BERT_HIDDEN], "float32", name=f"emb{i}.w_0", attr=_param(f"emb{i}.w_0", weights)
                )
                emb = paddle.reshape(paddle.gather(table, paddle.reshape(feed, [-1])), [-1, BERT_SEQ, BERT_HIDDEN])
                summed = emb if summed is None else summed + emb
            # tanh through fc's activation: Paddle 3's tanh() takes no legacy-program Variable
            dense = [
                _param(f"dense{i}.{p}_0", _weights(s, 14 + i))
                for i in (0, 1)
                for p, s in (("w", (BERT_HIDDEN,) * 2), ("b", (BERT_HIDDEN,)))
            ]
            sequence = paddle.static.nn.fc(
                summed, BERT_HIDDEN, num_flatten_dims=2, weight_attr=dense[0], bias_attr=dense[1], activation="tanh"
            )
            sequence = sequence * feeds[3]
            first = paddle.reshape(paddle.slice(sequence, axes=[1], starts=[0], ends=[1]), [-1, BERT_HIDDEN])
            pooled = paddle.static.nn.fc(
                first, BERT_HIDDEN, weight_attr=dense[2], bias_attr=dense[3], activation="tanh"
            )
            out = [pooled, sequence]
        else:
            raise ValueError(f"unknown tiny model {name!r}; known: {sorted(ALIASES)}")
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    os.makedirs(out_dir, exist_ok=True)
    outs = out if isinstance(out, list) else [out]
    paddle.static.save_inference_model(os.path.join(out_dir, "inference"), feeds, outs, exe, program=main)


def build(name: str, out_dir: str | os.PathLike[str], python: str = sys.executable) -> str:
    """Write the model ``name`` into ``out_dir`` (``inference.pdmodel`` / ``.pdiparams``),
    built by ``python`` in a child process; returns ``out_dir``."""
    env = dict(os.environ, FLAGS_enable_pir_api="0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    cmd = [python, "-m", "tests.support.paddle_serving.tiny_models", name, os.fspath(out_dir)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"building tiny model {name} failed: {out.stderr[-2000:]}")
    return os.fspath(out_dir)


def write_serving(name: str, target: str | os.PathLike[str], python: str = sys.executable) -> None:
    """The serving model folder ``target`` (+ ``target_client``) of tiny model ``name``."""
    import tempfile

    from tests.support.paddle_serving.model_folders import write_serving_model

    feed_alias, fetch_alias = ALIASES[name]
    with tempfile.TemporaryDirectory() as tmp:
        build(name, tmp, python)
        target = os.fspath(target)
        write_serving_model(tmp, target, target + "_client", feed_alias=feed_alias, fetch_alias=fetch_alias)


if __name__ == "__main__":
    if os.environ.get("FLAGS_enable_pir_api") != "0":  # noqa: SIM112 (paddle's own name)
        sys.exit("run with FLAGS_enable_pir_api=0 (or call tiny_models.build())")
    _build_in_process(sys.argv[1], sys.argv[2])
