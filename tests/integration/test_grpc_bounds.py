"""The gRPC doors hold the limits the HTTP door holds (issue 38), in the real server
(:class:`tests.support.live_app.LiveApp`, both services on ``rpc_port``): the token is
checked before a message is read or takes any budget; messages take their room from
the HTTP front's body budget, and a call waiting for room holds none of it; what a
message would make the parser build is counted before it is parsed; the v2 ``id`` is
bounded. Each refusal carries the status the same request gets over HTTP."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
import requests

from serving.grpc.call import HTTP_STATUS_KEY
from serving.protos import inference_messages, pipeline_messages
from tests.support.client_fakes import text_config

TOKEN = "bounds-t0ken"
AUTH = (("authorization", f"Bearer {TOKEN}"),)
BEARER = {"Authorization": f"Bearer {TOKEN}"}
V2 = "/inference.GRPCInferenceService/"
PADDLE = "/baidu.paddle_serving.pipeline_serving.PipelineService/inference"
IM, PM = inference_messages(), pipeline_messages()
MIB = 1 << 20
TENSOR = PM.Tensor(name="text", str_data=["a"]).SerializeToString()
DEADLINE_S = 30.0


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    for var in ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def serve(live_app):
    return lambda config, **kwargs: live_app(config, rpc=True, **kwargs)


def channel(live) -> grpc.Channel:
    return grpc.insecure_channel(live.rpc_address, options=[("grpc.max_send_message_length", -1)])


def failure(method, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        method(*args, **kwargs)
    return caught.value


def infer_request(text: str = "good", **fields) -> bytes:
    request = IM.ModelInferRequest(model_name="ernie", **fields)
    request.inputs.add(name="text", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(len(text.encode()).to_bytes(4, "little") + text.encode())
    return request.SerializeToString()


def v2_http(live, doc) -> int:
    return requests.post(f"{live.url}/v2/models/ernie/infer", json=doc, headers=BEARER, timeout=30).status_code


def claims_taken(budget, monkeypatch) -> list[int]:
    """Every claim taken on ``budget`` from now on (its size once taken)."""
    taken: list[int] = []
    claim = budget.claim

    def recording():
        made = claim()
        grow_within = made.grow_within

        def grow(nbytes, timeout_s):
            taken.append(nbytes)
            return grow_within(nbytes, timeout_s)

        made.grow_within = grow
        return made

    monkeypatch.setattr(budget, "claim", recording)
    return taken


def never_parsed(message_class, monkeypatch) -> list[int]:
    """``message_class``'s parser replaced by one that records its calls and fails them."""
    calls: list[int] = []

    def parse(data):
        calls.append(len(data))
        raise AssertionError("parsed a message the count should have refused")

    monkeypatch.setattr(message_class, "FromString", staticmethod(parse))
    return calls


# ------------------------------------------------------------------------------ the token first


@pytest.mark.parametrize(
    "method", [V2 + "ModelInfer", V2 + "ModelMetadata", V2 + "ModelReady", V2 + "ServerMetadata", PADDLE]
)
def test_a_call_without_the_token_is_refused_before_its_message_is_read_or_takes_budget(serve, monkeypatch, method):
    live = serve(text_config(auth_token=TOKEN))
    taken = claims_taken(live.server.body_budget, monkeypatch)
    with channel(live) as ch:
        # 8 MiB: over grpc's 1 MiB limit here, so a message read would be RESOURCE_EXHAUSTED instead
        for payload in (b"", b"\xff" * (8 * MIB)):
            err = failure(ch.unary_unary(method), payload, timeout=DEADLINE_S)
            assert err.code() == grpc.StatusCode.UNAUTHENTICATED
            assert dict(err.trailing_metadata())[HTTP_STATUS_KEY] == "401"
    assert taken == [] and live.server.body_budget.held == 0


def test_the_probes_take_no_budget_and_need_no_token(serve, monkeypatch):
    live = serve(text_config(auth_token=TOKEN))
    taken = claims_taken(live.server.body_budget, monkeypatch)
    with channel(live) as ch:
        assert ch.unary_unary(V2 + "ServerLive")(b"\xff" * (8 * MIB), timeout=DEADLINE_S) == b"\x08\x01"
        assert ch.unary_unary(V2 + "ServerReady")(b"", timeout=DEADLINE_S) == b"\x08\x01"
    assert taken == []


# ------------------------------------------------------------------------------ one budget with HTTP


def test_messages_take_room_in_the_http_fronts_budget_and_a_waiting_call_takes_none(serve):
    config = text_config(max_body_size=MIB, auth_token=TOKEN)
    config["http"] = {"max_buffered_mb": 1}  # room for one message of the largest size
    live = serve(config)
    budget = live.server.body_budget
    gate = threading.Event()

    def never():  # a message that does not come until the gate opens: its call holds the room
        gate.wait(DEADLINE_S)
        return
        yield b""

    with channel(live) as ch:
        holder = ch.stream_unary(V2 + "ModelInfer").future(never(), metadata=AUTH, timeout=DEADLINE_S)
        end = time.monotonic() + DEADLINE_S
        while budget.held < MIB:
            assert time.monotonic() < end and not holder.done(), "the holder never took its room"
            time.sleep(0.01)
        waiter = ch.unary_unary(V2 + "ModelInfer").future(
            infer_request(), metadata=AUTH, timeout=DEADLINE_S, wait_for_ready=True
        )
        # HTTP bodies come from the same budget: none fits while the gRPC message holds it
        http = requests.post(f"{live.url}/ernie/prediction", json={"key": ["text"], "value": ["good"]}, headers=BEARER)
        assert http.status_code == 503 and "http.max_buffered_mb" in http.text
        time.sleep(0.3)
        assert not waiter.done() and budget.held == MIB  # the waiting call holds no budget
        gate.set()
        assert failure(holder.result).code() == grpc.StatusCode.INVALID_ARGUMENT  # it sent no message
        assert waiter.result(timeout=DEADLINE_S)  # then the waiting call got the room and its answer
    end = time.monotonic() + DEADLINE_S
    while budget.held:
        assert time.monotonic() < end
        time.sleep(0.01)


def test_a_call_that_finds_no_room_within_its_deadline_is_unavailable_with_retry_after(serve):
    config = text_config(max_body_size=MIB, auth_token=TOKEN)
    config["http"] = {"max_buffered_mb": 1}
    live = serve(config)
    claim = live.server.body_budget.claim()
    assert claim.grow_to(MIB)  # the budget is held (by an HTTP body, say)
    try:
        with channel(live) as ch:
            err = failure(ch.unary_unary(V2 + "ModelInfer"), infer_request(), metadata=AUTH, timeout=0.5)
    finally:
        claim.release()
    # the server's 503 or, when the deadline won the race, the client's own
    assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    if err.code() == grpc.StatusCode.UNAVAILABLE:
        assert int(dict(err.trailing_metadata())["retry-after"]) >= 1


# ------------------------------------------------------------------------------ counted before parsed


def test_many_empty_inputs_are_refused_before_the_message_is_parsed_as_http_refuses_them(serve, monkeypatch):
    live = serve(text_config(auth_token=TOKEN))
    parsed = never_parsed(IM.ModelInferRequest, monkeypatch)
    payload = IM.ModelInferRequest(model_name="ernie").SerializeToString() + b"\x2a\x00" * 100_000
    with channel(live) as ch:
        err = failure(ch.unary_unary(V2 + "ModelInfer"), payload, metadata=AUTH, timeout=DEADLINE_S)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "values" in err.details()
    assert parsed == []
    assert v2_http(live, {"inputs": [{}] * 100_000}) == 413
    assert live.server.body_budget.held == 0


@pytest.mark.parametrize(
    "payload",
    [
        b"\x0a\x04text\x12\x01a" * 50_000,  # 50,000 keys and values
        (b"\x1a" + bytes([len(TENSOR)]) + TENSOR) * 50_000,  # 50,000 tensors
    ],
    ids=["keys-values", "tensors"],
)
def test_paddle_keys_and_tensors_are_counted_before_the_message_is_parsed(serve, monkeypatch, payload):
    live = serve(text_config(auth_token=TOKEN))
    parsed = never_parsed(PM.Request, monkeypatch)
    with channel(live) as ch:
        answer = ch.unary_unary(PADDLE, response_deserializer=PM.Response.FromString)(
            payload, metadata=AUTH, timeout=DEADLINE_S
        )
    assert answer.err_no == 413 and "values" in answer.err_msg and parsed == []
    http = requests.post(
        f"{live.url}/ernie/prediction", json={"key": ["text"] * 50_000, "value": ["a"] * 50_000}, headers=BEARER
    )
    assert http.status_code == 413


@pytest.mark.parametrize("count, err_no, why", [(8, 400, "numpy array (int64_data)"), (500_000, 413, "values")])
def test_a_paddle_numpy_tensor_is_refused_by_batchlines_own_pipelines_a_large_one_unparsed(
    serve, monkeypatch, count, err_no, why
):
    live = serve(text_config(auth_token=TOKEN))
    calls = []
    real_parse = PM.Request.FromString
    monkeypatch.setattr(PM.Request, "FromString", staticmethod(lambda data: calls.append(1) or real_parse(data)))
    request = PM.Request()
    request.tensors.add(name="text", int64_data=[0] * count, shape=[count], elem_type=0)
    with channel(live) as ch:
        answer = ch.unary_unary(PADDLE, response_deserializer=PM.Response.FromString)(
            request.SerializeToString(), metadata=AUTH, timeout=DEADLINE_S
        )
    assert answer.err_no == err_no and why in answer.err_msg
    assert len(calls) == (err_no == 400)  # over the values a request may hold: counted on the wire, never parsed


@pytest.mark.parametrize("count, status, code", [(8, 400, "INVALID_ARGUMENT"), (100_000, 413, "RESOURCE_EXHAUSTED")])
def test_numeric_contents_get_the_status_http_gives_them(serve, count, status, code):
    live = serve(text_config(auth_token=TOKEN))
    request = IM.ModelInferRequest(model_name="ernie")
    request.inputs.add(name="text", datatype="FP32", shape=[count]).contents.fp32_contents.extend([0.5] * count)
    with channel(live) as ch:
        err = failure(ch.unary_unary(V2 + "ModelInfer"), request.SerializeToString(), metadata=AUTH, timeout=30)
    assert err.code().name == code
    assert v2_http(
        live, {"inputs": [{"name": "text", "datatype": "FP32", "shape": [count], "data": [0.5] * count}]}
    ) == (status)


def test_an_id_longer_than_http_takes_is_invalid_argument(serve):
    live = serve(text_config(auth_token=TOKEN))
    with channel(live) as ch:
        infer = ch.unary_unary(V2 + "ModelInfer", response_deserializer=IM.ModelInferResponse.FromString)
        err = failure(infer, infer_request(id="x" * 1_000_000), metadata=AUTH, timeout=DEADLINE_S)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "'id' has 1000000 characters" in err.details()
        assert infer(infer_request(id="x" * 256), metadata=AUTH, timeout=DEADLINE_S).id == "x" * 256
    doc = {"id": "x" * 1_000_000, "inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["good"]}]}
    assert v2_http(live, doc) == 400


# ------------------------------------------------------------------------------ front processes


def test_with_front_processes_grpc_gets_a_budget_of_one_fronts_share(serve):
    config = text_config(max_body_size=MIB, auth_token=TOKEN)
    live = serve(config, front_workers=2)
    assert live.server.grpc is not None
    budget = live.server.grpc.room.budget
    assert budget.capacity == 2 * MIB  # half of the 4 MiB default (4 bodies of the largest size)
    with channel(live) as ch:
        assert ch.unary_unary(V2 + "ModelInfer")(infer_request(), metadata=AUTH, timeout=DEADLINE_S)
    assert budget.held == 0
