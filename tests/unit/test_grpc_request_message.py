"""serving/grpc/wire_count.py (RequestMessage): a request message counted on the wire before it
is parsed (413 over the budget, and the parser never runs), 400 for bytes that are
not one."""

import pytest

from serving.errors import BadRequest, PayloadTooLarge
from serving.grpc.wire_count import RequestMessage
from serving.protos import inference_messages

IM = inference_messages()


def test_a_message_is_parsed_within_its_budget():
    request = RequestMessage(IM.ModelInferRequest)
    data = IM.ModelInferRequest(model_name="ocr", raw_input_contents=[b"x"]).SerializeToString()
    assert request.parse(data, max_values=1).model_name == "ocr"


def test_a_message_over_its_budget_is_refused_before_the_parser_runs(monkeypatch):
    request = RequestMessage(IM.ModelInferRequest)

    def never(data):
        raise AssertionError("parsed a message over its budget")

    monkeypatch.setattr(request, "message_class", type("Unparsable", (), {"FromString": staticmethod(never)}))
    with pytest.raises(PayloadTooLarge):
        request.parse(b"\x2a\x00" * 1000, max_values=272)


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x2a\x80", b"\x0a\x02\xff\xfe"])
def test_bytes_that_are_not_the_message_are_bad_input_naming_its_type(data):
    with pytest.raises(BadRequest, match="not a valid inference.ModelInferRequest message"):
        RequestMessage(IM.ModelInferRequest).parse(data, max_values=272)
