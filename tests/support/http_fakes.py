"""A fake text pipeline and the route context around it, to build one route
group of ``serving.http.routes`` on a bare Flask app."""

from __future__ import annotations

from typing import Any

from serving.batching.decode_budget import DecodeBudget
from serving.batching.live_pipelines import PipelineRepository
from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import RouteContext
from serving.service.core import HandlerCount, RequestCore
from tests.support.engine_fakes import op_conf


def echo_pipeline(name: str = "echo", **dag: Any) -> Pipeline:
    """A pipeline of one ``EchoTextOp`` (text in, no model), not started."""
    dag_conf: dict[str, Any] = {"request_timeout_ms": 10000, "max_queue_size": 64}
    dag_conf.update(dag)
    conf = op_conf("EchoTextOp", max_batch_size=4, max_queue_delay=1, max_body_size=4096)
    return Pipeline(parse_config({"name": name, "max_inputs_per_request": 4, "dag": dag_conf, "op": {"echo": conf}}))


def route_context(repository: PipelineRepository, **overrides: Any) -> RouteContext:
    """The context ``create_app`` would build around ``repository``; ``overrides`` replace the
    core's fields (``decode_budget``, ``handlers``, ``limits``) or ``metrics_text``."""
    metrics_text = overrides.pop("metrics_text", repository.metrics.render)
    core_fields: dict[str, Any] = {"decode_budget": DecodeBudget(1 << 30), "handlers": HandlerCount()}
    core_fields.update(overrides)
    return RouteContext(core=RequestCore(repository, **core_fields), metrics_text=metrics_text)
