from serving.paddle_serving.web_service import PipelineServer

__all__ = ["PipelineServer"]
