from serving.paddle_serving.operator import Op, RequestOp, ResponseOp
from serving.paddle_serving.web_service import PipelineServer, WebService

__all__ = ["Op", "PipelineServer", "RequestOp", "ResponseOp", "WebService"]
