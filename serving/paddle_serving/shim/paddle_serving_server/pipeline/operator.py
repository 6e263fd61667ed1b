from serving.paddle_serving.operator import Op, RequestOp, ResponseOp

__all__ = ["Op", "RequestOp", "ResponseOp"]
