"""Paddle Serving 0.9's ``paddle_serving_server.pipeline``, as batchline provides it."""

from serving.paddle_serving.operator import Op, RequestOp, ResponseOp
from serving.paddle_serving.pipeline_client import PipelineClient
from serving.paddle_serving.web_service import PipelineServer

__all__ = ["Op", "PipelineClient", "PipelineServer", "RequestOp", "ResponseOp"]
