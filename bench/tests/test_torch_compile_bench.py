"""bench/torch_compile.py's cases without running a model: which variants a case times, and
the inputs a masked det case is fed (pages of mixed extents, multiples of det's stride)."""

from __future__ import annotations

import numpy as np

from bench.torch_compile import CASES, VARIANTS, feed_for, variants_of
from serving.op import extent_input


def test_a_plain_case_times_every_variant_of_its_device():
    assert variants_of(CASES["cpu"]["rec"], "cpu") == {k: dict(v) for k, v in VARIANTS["cpu"].items()}


def test_a_masked_case_times_each_torch_variant_with_and_without_the_masks_and_no_other_engine():
    variants = variants_of(CASES["cuda"]["det_masked"], "cuda")
    assert variants["compiled+graphs"] == {"cuda_graphs": True, "torch_compile": True, "mask_padding": True}
    assert variants["compiled+graphs, without mask_padding"] == {"cuda_graphs": True, "torch_compile": True}
    assert len(variants) == 2 * len(VARIANTS["cuda"])
    cpu = variants_of(CASES["cpu"]["det_masked"], "cpu")
    assert not any("openvino" in name for name in cpu)  # OpenVINO cannot mask


def test_a_masked_case_feeds_every_other_page_a_smaller_extent_on_det_s_stride():
    case = CASES["cuda"]["det_masked"]
    feed = feed_for(case)
    extents = feed[extent_input("x")]
    assert feed["x"].shape == (case.batch, 3, case.size, case.size)
    assert extents.shape == (case.batch, 2) and extents.dtype == np.int64
    assert (extents[::2] == case.size).all() and (extents[1::2] < case.size).all()
    assert (extents % 32 == 0).all()
