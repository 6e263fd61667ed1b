"""The bundled client: ``PipelineClient`` for Python, and the load generator
behind ``batchline bench``."""

from client.loadgen import LevelResult, run_closed_loop, run_open_loop
from client.pipeline_client import PipelineClient, PipelineError

__all__ = ["LevelResult", "PipelineClient", "PipelineError", "run_closed_loop", "run_open_loop"]
