"""The ONNX twin of the exported classifier, for ``engine: openvino``.

Paddle 3 exports a PIR program (``inference.json``), which OpenVINO Runtime
cannot read, and Paddle 3.3's legacy-program export fails on this network.
paddle2onnx converts the PIR export as it is; OpenVINO reads the ONNX file.
Its logits match Paddle Inference's to about 1e-6 (tests/e2e/test_ernie_server.py
checks the labels through both engines).

    python -m recipes.ernie_fields.onnx_export pipelines/ernie_fields/model
"""

from __future__ import annotations

import argparse
import logging
import os

log = logging.getLogger(__name__)

# the lowest opset with every operator this network needs in paddle2onnx 2.x
OPSET = 11


def export_onnx(model_dir: str) -> str:
    """Write ``inference.onnx`` beside ``inference.json`` in ``model_dir``; returns its path."""
    import paddle2onnx

    out = os.path.join(model_dir, "inference.onnx")
    paddle2onnx.export(
        os.path.join(model_dir, "inference.json"),
        os.path.join(model_dir, "inference.pdiparams"),
        save_file=out,
        opset_version=OPSET,
        enable_onnx_checker=True,
    )
    _name_dynamic_dims(out)
    log.info("wrote %s (%.1f MB)", out, os.path.getsize(out) / 1e6)
    return out


def _name_dynamic_dims(path: str) -> None:
    """Rename the dynamic dimensions ``batch``, ``seq``, ``dim2``... in order of appearance.

    paddle2onnx numbers them from an unordered set, so two exports of the same
    weights differed in these names alone: renamed, the file is the same bytes
    from build to build.
    """
    import onnx

    model = onnx.load(path)
    names: dict[str, str] = {}
    canonical = ["batch", "seq"]
    for value in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param:
                if dim.dim_param not in names:
                    k = len(names)
                    names[dim.dim_param] = canonical[k] if k < len(canonical) else f"dim{k}"
                dim.dim_param = names[dim.dim_param]
    onnx.save(model, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir", nargs="?", default="pipelines/ernie_fields/model")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    export_onnx(args.model_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
