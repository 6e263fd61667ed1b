"""``Request``, ``Response`` and ``Tensor`` of Paddle Serving's pipeline_service.proto."""

from serving.protos import pipeline_messages

_messages = pipeline_messages()
Request = _messages.Request
Response = _messages.Response
Tensor = _messages.Tensor

__all__ = ["Request", "Response", "Tensor"]
