"""serving/protos: the committed descriptor sets are what protoc makes of the
.proto files, and the messages built from them are wire-compatible with the real
clients' own generated modules (tritonclient's), in the same process."""

from serving.protos import generate, inference_messages, pipeline_messages


def test_the_committed_descriptor_sets_are_what_protoc_makes_of_the_protos():
    assert generate.stale() == []


def test_open_inference_messages_read_what_tritonclient_writes_and_back():
    from tritonclient.grpc import service_pb2  # its own generated module, in protobuf's default pool

    theirs = service_pb2.ModelInferRequest(model_name="ocr", model_version="2", id="r1")
    theirs.parameters["priority"].uint64_param = 3  # tritonclient sends priority as a uint64
    tensor = theirs.inputs.add(name="image", datatype="BYTES", shape=[2])
    tensor.contents.bytes_contents.extend([b"a", b"bc"])
    theirs.raw_input_contents.append(b"\x01\x00\x00\x00z")

    ours = inference_messages().ModelInferRequest.FromString(theirs.SerializeToString())
    assert (ours.model_name, ours.model_version, ours.id) == ("ocr", "2", "r1")
    assert ours.parameters["priority"].WhichOneof("parameter_choice") == "uint64_param"
    assert ours.parameters["priority"].uint64_param == 3
    assert list(ours.inputs[0].contents.bytes_contents) == [b"a", b"bc"] and list(ours.inputs[0].shape) == [2]
    assert service_pb2.ModelInferRequest.FromString(ours.SerializeToString()) == theirs


def test_pipeline_messages_carry_paddle_serving_0_9_fields():
    m = pipeline_messages()
    request = m.Request(key=["image"], value=["aGk="], name="ocr", method="prediction", logid=7, clientip="10.0.0.1")
    request.tensors.add(name="image", byte_data=b"\x89PNG", elem_type=20)
    again = m.Request.FromString(request.SerializeToString())
    assert again == request and again.tensors[0].byte_data == b"\x89PNG"
    response = m.Response(err_no=413, err_msg="too large", key=["result"], value=["[]"])
    assert [f.number for f in response.DESCRIPTOR.fields] == [1, 2, 3, 4, 5]
    assert m.Request.DESCRIPTOR.full_name == "baidu.paddle_serving.pipeline_serving.Request"


def test_a_serving_model_folders_config_parses_as_paddle_servings_general_model_config(monkeypatch):
    """What PaddleDetection's serving script does: text_format.Merge of serving_server_conf.prototxt into
    paddle_serving_server.proto.general_model_config_pb2.GeneralModelConfig; the bytes are the real one's
    (config_bytes is held to Paddle Serving's own pb2 by bench/paddle_serving/check_model_folders.py)."""
    import importlib
    import sys

    from google.protobuf import text_format

    from serving.paddle_serving.service_file import SHIM_DIR
    from tests.support.paddle_serving.model_folders import ModelVar, config_bytes, config_text

    monkeypatch.setattr(sys, "path", [SHIM_DIR, *sys.path])
    m_config = importlib.import_module("paddle_serving_server.proto.general_model_config_pb2")
    feeds = [ModelVar("x", "image", False, 1, [3, -1, -1]), ModelVar("im_shape", "im_shape", True, 1, [2])]
    fetches = [ModelVar("save_infer_model/scale_0.tmp_1", "bbox", False, 1, [-1, 6])]
    parsed = text_format.Merge(config_text(feeds, fetches), m_config.GeneralModelConfig())
    assert [v.name for v in parsed.feed_var] == ["x", "im_shape"] and parsed.feed_var[1].is_lod_tensor
    assert [v.alias_name for v in parsed.fetch_var] == ["bbox"] and list(parsed.fetch_var[0].shape) == [-1, 6]
    assert parsed.SerializeToString() == config_bytes(feeds, fetches)
