"""The request limits of a pipeline, every door's, and the server-wide ones derived from
every pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from serving.batching.decode_budget import budget_bytes, default_budget_bytes, request_bytes_limit
from serving.config.file_set import RepositoryConfig
from serving.config.schema import ServingConfig
from serving.service.decode import InputLimits
from serving.service.served_pipelines import ServedRepository


@dataclass
class RequestLimits:
    max_body_size: int
    max_inputs: int
    inputs: InputLimits
    wait_slice_s: float = 0.05  # how often a waiting handler checks for a disconnected client


def limits_from_config(config: ServingConfig) -> RequestLimits:
    sources = config.dag_graph.sources
    body = max(config.op[s].local_service_conf.max_body_size for s in sources)
    return RequestLimits(
        max_body_size=body,
        max_inputs=config.max_inputs_per_request,
        inputs=InputLimits(
            max_image_pixels=config.max_image_pixels,
            max_request_pixels=2 * config.max_image_pixels,
            max_request_bytes=request_bytes_limit(config.max_image_pixels),
        ),
    )


def share_of(total: int, share: float, floor: int) -> int:
    """One front process's part of a server-wide byte budget: ``share`` of it, but never
    less than ``floor`` (what one largest request needs) or more than the whole."""
    return total if share >= 1.0 else max(min(floor, total), int(total * share))


def largest_body_size(config: RepositoryConfig) -> int:
    """The largest body any pipeline of ``config`` takes (the app-wide limit; each pipeline checks its own)."""
    return max(limits_from_config(pipeline).max_body_size for pipeline in config.pipelines)


def largest_max_inputs(config: RepositoryConfig) -> int:
    """The most inputs any pipeline of ``config`` takes in one request."""
    return max(pipeline.max_inputs_per_request for pipeline in config.pipelines)


def decode_budget_share(repository: ServedRepository, share: float) -> int:
    """``share`` of the server's decode budget (``decode_budget_mb``, or derived from the pipelines'
    ``max_image_pixels``), never less than what the largest request of any pipeline may hold."""
    config = repository.config
    pixels = [p.max_image_pixels for p in config.pipelines]
    return share_of(budget_bytes(config.decode_budget_mb, pixels), share, default_budget_bytes(pixels))


def http_threads(config: RepositoryConfig) -> int:
    """``worker_num`` threads, and one more per admissible request, so a request beyond
    ``max_queue_size`` gets a fast 503 from admission, not a wait in the socket backlog."""
    return config.worker_num + config.max_queue_size
