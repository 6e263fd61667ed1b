from serving.paddle_serving.pipeline_client import PipelineClient, PipelinePredictFuture

__all__ = ["PipelineClient", "PipelinePredictFuture"]
