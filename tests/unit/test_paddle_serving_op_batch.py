"""Paddle Serving's hook semantics for one batch (serving/paddle_serving/op_batch.py), with
fake ops and a fake model: what each hook gets, what a batch's process() sees, and the
err_no / err_msg each failure gives its own request only."""

import os

import numpy as np
import pytest

from serving.paddle_serving.channel import ChannelData, ChannelDataErrcode, ChannelDataType
from serving.paddle_serving.op_batch import Item, OpBatch
from serving.paddle_serving.operator import DAG_EXECUTOR, Op, ResponseOp

pytestmark = pytest.mark.unit


class FakeClient:
    """A model that doubles ``x``; remembers each feed it ran."""

    feed_names_ = ["x"]
    fetch_names_ = ["y"]

    def __init__(self):
        self.feeds = []

    def predict(self, feed, fetch=None, batch=False, log_id=0):
        self.feeds.append({k: np.array(v) for k, v in feed.items()})
        return {"y": feed["x"] * 2}


def _op(cls, **kwargs):
    op = cls(name="op", **kwargs)
    op.client = FakeClient()
    op.with_serving = True
    op._fetch_names = ["y"]
    return op


def _items(*dicts):
    return [Item({DAG_EXECUTOR: d}, data_id=i, log_id=100 + i) for i, d in enumerate(dicts)]


class RowsOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, d),) = input_dicts.items()
        if d.get("refuse"):
            return None, False, 61, "refused"
        if d.get("raise"):
            raise ValueError("can't read 'it'")
        return {"x": np.full((d["rows"], 2), d["v"], dtype=np.float32)}, False, None, ""

    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        if input_dicts[DAG_EXECUTOR].get("bad_out"):
            return ["not", "a", "dict"], None, ""
        if input_dicts[DAG_EXECUTOR].get("post_refuse"):
            return {}, 62, "refused after"
        return {"y": fetch_dict["y"]}, None, ""


def test_a_batch_runs_one_process_call_and_each_request_gets_its_own_rows():
    op = _op(RowsOp)
    out = OpBatch(op).run(_items({"rows": 1, "v": 1.0}, {"rows": 3, "v": 2.0}, {"rows": 2, "v": 3.0}))
    assert len(op.client.feeds) == 1 and op.client.feeds[0]["x"].shape == (6, 2)
    assert [o.parse()["y"].shape for o in out] == [(1, 2), (3, 2), (2, 2)]
    assert [float(o.parse()["y"][0, 0]) for o in out] == [2.0, 4.0, 6.0]
    assert all(o.datatype == ChannelDataType.CHANNEL_NPDATA.value and o.error_code == 0 for o in out)
    assert [(o.id, o.log_id) for o in out] == [(0, 100), (1, 101), (2, 102)]


def test_failures_fail_only_their_own_request_with_paddle_servings_codes():
    op = _op(RowsOp)
    out = OpBatch(op, 0).run(
        _items(
            {"rows": 1, "v": 1.0, "refuse": True},
            {"raise": True},
            {"rows": 1, "v": 1.0, "bad_out": True},
            {"rows": 1, "v": 1.0, "post_refuse": True},
            {"rows": 1, "v": 5.0},
        )
    )
    refused, raised, bad_out, post_refused, fine = out
    assert (refused.error_code, refused.prod_error_code, refused.prod_error_info) == (50, 61, "refused")
    assert raised.error_code == ChannelDataErrcode.UNKNOW.value
    assert raised.error_info == (
        "Log_id: 101  Raise_msg: cant read it  ClassName: Op._run_preprocess.<locals>.preprocess_help  "
        "FunctionName: preprocess_help"
    )
    assert bad_out.error_code == ChannelDataErrcode.TYPE_ERROR.value
    assert bad_out.error_info == (
        "Log_id: 102  Raise_msg:  postprocess should return dict  ClassName: "
        "Op._run_postprocess.<locals>.postprocess_help  FunctionName: postprocess_help"
    )
    assert (post_refused.prod_error_code, post_refused.prod_error_info) == (62, "refused after")
    assert float(fine.parse()["y"][0, 0]) == 10.0
    assert op.client.feeds[0]["x"].shape == (3, 2)  # the three that reached process(), in one call


class ListOp(Op):
    """Mini-batches: preprocess returns a list of feeds; postprocess gets the list of fetches."""

    def preprocess(self, input_dicts, data_id, log_id):
        ((_, d),) = input_dicts.items()
        return [{"x": np.full((n, 1), 1.0)} for n in d["sizes"]], False, None, ""

    def postprocess(self, input_dicts, fetch_data, data_id, log_id):
        return {"rows": str([len(f["y"]) for f in fetch_data])}, None, ""


def test_a_list_of_feeds_runs_one_process_call_per_feed():
    op = _op(ListOp)
    out = OpBatch(op).run(_items({"sizes": [2, 3]}, {"sizes": [1]}))
    assert [len(f["x"]) for f in op.client.feeds] == [2, 3, 1]
    assert [o.parse() for o in out] == [{"rows": "[2, 3]"}, {"rows": "[1]"}]
    assert all(o.datatype == ChannelDataType.DICT.value for o in out)


class SkipOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, d),) = input_dicts.items()
        return {"kept": d["text"]}, True, None, ""

    def postprocess(self, input_dicts, fetch_data, data_id, log_id):
        return {"res": fetch_data["kept"]}, None, ""


def test_a_skipped_process_hands_preprocess_output_to_postprocess():
    op = _op(SkipOp)
    (out,) = OpBatch(op).run(_items({"text": "hi"}))
    assert out.parse() == {"res": "hi"} and op.client.feeds == []


def test_an_op_without_a_model_hands_preprocess_output_to_postprocess():
    op = SkipOp(name="nomodel")
    out = OpBatch(op).run(_items({"text": "a"}, {"text": "b"}))
    assert [o.parse() for o in out] == [{"res": "a"}, {"res": "b"}]


class FailingModelOp(RowsOp):
    def process(self, feed_batch, typical_logid=0):
        raise RuntimeError("model fell over")


def test_a_process_exception_fails_the_whole_batch_with_its_message():
    out = OpBatch(_op(FailingModelOp), 3).run(_items({"rows": 1, "v": 1.0}, {"rows": 1, "v": 2.0}))
    assert {o.error_code for o in out} == {ChannelDataErrcode.UNKNOW.value}
    assert out[0].error_info == (
        "[op] failed to predict. (data_id=0 log_id=0) [op|3] Failed to process(batch: [0, 1]): model fell over. "
        "Please check the input dict and checkout PipelineServingLogs/pipeline.log for more details."
    )


def test_the_default_preprocess_refuses_two_inputs():
    op = Op(name="two")
    (out,) = OpBatch(op).run([Item({"a": {}, "b": {}}, 0, 0)])
    assert out.error_code == ChannelDataErrcode.UNKNOW.value and "override preprocess" in out.error_info


def test_the_response_op_packs_arrays_as_their_repr_and_errors_as_paddle_serving_does():
    response = ResponseOp(input_ops=[Op(name="last")])
    arrays = ChannelData(ChannelDataType.CHANNEL_NPDATA.value, npdata={"y": np.arange(3)}, data_id=0)
    resp = response.pack_response_package(arrays)
    assert (resp.err_no, list(resp.key), list(resp.value)) == (0, ["y"], ["array([0, 1, 2])"])
    product = ChannelData(error_code=50, error_info="", prod_error_code=61, prod_error_info="no", data_id=0)
    assert (response.pack_response_package(product).err_no, response.pack_response_package(product).err_msg) == (
        61,
        "no",
    )
    not_str = ChannelData(ChannelDataType.DICT.value, dictdata={"a": "x", "b": 1}, data_id=0)
    resp = response.pack_response_package(not_str)
    assert resp.err_no == ChannelDataErrcode.TYPE_ERROR.value and list(resp.key) == ["a"]
    assert resp.err_msg == "@DAGExecutor fetch var type must be str(<class 'int'>)."


def test_a_serving_model_folders_prototxt_is_read_and_other_file_names_are_linked(tmp_path):
    from serving.paddle_serving.model_folder import engine_folder, read_model_folder

    src = tmp_path / "serving_server"
    src.mkdir()
    (src / "serving_server_conf.prototxt").write_text(
        'feed_var {\n  name: "x"\n  alias_name: "x"\n  is_lod_tensor: false\n  feed_type: 1\n  shape: 13\n}\n'
        'fetch_var {\n  name: "fc_0.tmp_1"\n  alias_name: "price"\n  is_lod_tensor: false\n  fetch_type: 1\n'
        "  shape: 1\n}\n"
    )
    (src / "__model__").write_bytes(b"program")
    (src / "__params__").write_bytes(b"params")
    folder = read_model_folder(str(src))
    assert [(v.name, v.alias_name, v.type, v.shape) for v in folder.feed_vars] == [("x", "x", 1, (13,))]
    assert folder.fetch_aliases == ["price"]
    linked = engine_folder(str(src), str(tmp_path / "cache"))
    assert os.path.dirname(linked) == str(tmp_path / "cache")
    assert (tmp_path / "cache" / os.path.basename(linked) / "inference.pdmodel").read_bytes() == b"program"
    assert read_model_folder(linked).fetch_aliases == ["price"]
    assert engine_folder(str(src), str(tmp_path / "cache")) == linked  # kept, not made again


def test_the_local_predictor_keys_fetches_as_paddle_serving_does():
    from serving.paddle_serving.model_folder import ModelFolder, Var
    from serving.paddle_serving.predictor import LocalPredictor

    class Runner:
        input_names = ["x"]
        output_names = ["fc_0.tmp_1"]

        def run(self, feed):
            self.fed = feed
            return [feed["x"].sum(axis=1, keepdims=True)]

    folder = ModelFolder("m", (Var("x", "x", type=1, shape=(13,)),), (Var("fc_0.tmp_1", "price", type=1),), True)
    predictor = LocalPredictor(Runner(), folder)
    out = predictor.predict(feed={"x": np.ones((2, 13), dtype=np.float64)}, fetch=["price"], batch=True)
    assert list(out) == ["price"] and out["price"].tolist() == [[13.0], [13.0]]  # an alias: by position
    assert predictor.runner.fed["x"].dtype == np.float32  # feed_type 1
    out = predictor.predict(feed={"x": np.ones(13)}, fetch=["fc_0.tmp_1"])  # batch=False adds the batch axis
    assert out["fc_0.tmp_1"].shape == (1, 1)
    assert list(predictor.predict(feed={"x": np.ones((1, 13))}, batch=True)) == ["fc_0.tmp_1"]


def test_the_default_process_checks_feed_and_fetch_names_as_paddle_serving_does():
    class WrongFeed(RowsOp):
        def preprocess(self, input_dicts, data_id, log_id):
            return {"words": np.zeros((1, 1))}, False, None, ""

    (out,) = OpBatch(_op(WrongFeed)).run(_items({}))
    assert out.error_code == ChannelDataErrcode.INPUT_PARAMS_ERROR.value
    assert out.error_info == (
        "[op] failed to predict. Log_id: 0  Raise_msg:  invalid arg list  ClassName: "
        "Op.process.<locals>.feed_fetch_list_check_helper  FunctionName: feed_fetch_list_check_helper. "
        "Please check the input dict and checkout PipelineServingLogs/pipeline.log for more details."
    )
