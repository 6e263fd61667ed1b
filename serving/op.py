"""The op hook vocabulary: what an op implements, and nothing else.

An op turns one request's inputs into *items* (``expand``), prepares each item
on a worker thread (``preprocess``), lets the engine batch items across
requests, packs a batch into predictor feeds (``collate`` -> ``SubBatch``),
runs them (``run``), unpacks per-item outputs (``uncollate``), finishes each
item (``postprocess``) and folds a request's item results back into one output
(``merge``). Per-item hooks may raise :class:`serving.errors.BadRequest` (or
any exception): only that item's request fails.

The engine knows nothing about OCR or ERNIE; ops know nothing about HTTP.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict


class NoParams(BaseModel):
    """Default op-specific ``params`` schema: accepts no keys."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class SubBatch:
    """One predictor run: which items it holds and their padded feed.

    ``indices`` are positions in the list handed to ``collate``.
    ``real_units``/``padded_units`` measure padding waste (e.g. pixels or
    tokens before and after padding); the engine reports
    ``1 - real/padded`` as the padding ratio.
    """

    indices: list[int]
    feed: dict[str, np.ndarray]
    real_units: int = 0
    padded_units: int = 0
    meta: Any = None  # op-private data for uncollate (e.g. per-item shapes)


@dataclass
class OpContext:
    """What the engine hands an op at construction."""

    name: str                      # the op's name in the config
    conf: Any                      # serving.config.OpConfig (typed, validated)
    params: BaseModel = field(default_factory=NoParams)  # validated op params
    # first CPU of this op's pinned predictor processes (OpenVINO, process mode);
    # the pipeline hands out consecutive CPUs op after op
    cpu_offset: int = 0


class Op:
    """Base class for pipeline ops. Override the hooks you need.

    Class attributes:
      ``Params``      pydantic model validating ``op.<name>.params`` in config.
      ``input_kind``  for ops fed by the request: ``"image"`` or ``"text"``,
                      telling the HTTP layer how to decode request values.
      ``needs_model`` whether ``local_service_conf.model_config`` is required.
    """

    Params: ClassVar[type[BaseModel]] = NoParams
    input_kind: ClassVar[str | None] = None
    needs_model: ClassVar[bool] = True

    def __init__(self, ctx: OpContext):
        self.ctx = ctx
        self.name = ctx.name
        self.conf = ctx.conf
        params = ctx.params
        if not isinstance(params, self.Params):  # a plain mapping (or the default NoParams)
            params = self.Params.model_validate(dict(params) if isinstance(params, Mapping) else {})
        self.params = params

    # ---- life cycle -------------------------------------------------
    def load(self) -> None:
        """Read dictionaries, vocabularies etc. Called once before serving."""

    def create_runners(self, count: int) -> list[Any]:
        """Return ``count`` independent runners (one per instance).

        A runner is anything ``run`` accepts; by default a
        :class:`serving.predictor.PaddlePredictor`, the first loaded from
        ``model_config`` and the rest cloned from it (shared weights), or with
        ``instance_mode: process`` a :class:`serving.process_runner.ProcessPredictor`
        (one child process each; overlaps with other ops despite the GIL).
        OpenVINO processes are pinned to CPU sets starting at ``ctx.cpu_offset``
        (:func:`serving.process_runner.openvino_cpu_sets`).
        """
        svc = self.conf.local_service_conf
        if getattr(svc, "instance_mode", "thread") == "process":
            from serving.process_runner import create_process_predictors

            return create_process_predictors(svc, count, self.ctx.cpu_offset)
        from serving.predictor import create_predictors

        return create_predictors(svc, count)

    def warmup_items(self) -> list[Any]:
        """Preprocessed items covering the shapes worth warming (buckets)."""
        return []

    # ---- per request --------------------------------------------------
    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        """Request-level inputs -> item payloads.

        ``inputs`` is ``{"input": value}`` for ops fed by the request, else
        ``{upstream_op_name: upstream_output, ...}``. Return ``[]`` to skip
        inference for this request (``merge`` is still called).
        """
        return [inputs["input"]] if "input" in inputs else [dict(inputs)]

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        """Item results (in ``expand`` order) -> this op's output for the request."""
        return results[0] if len(results) == 1 else results

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> Any:
        return payload

    def postprocess(self, item: Any, output: Any) -> Any:
        return output

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[Any]) -> list[SubBatch]:
        """Pack preprocessed items into one or more padded predictor feeds."""
        raise NotImplementedError(f"op {self.name!r} must implement collate()")

    def run(self, runner: Any, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run one sub-batch on this instance's runner."""
        return runner.run(feed)

    def uncollate(self, sub: SubBatch, outputs: list[np.ndarray]) -> list[Any]:
        """Per-item outputs of a sub-batch, in ``sub.indices`` order.

        Default: slice every output along axis 0, one row per item.
        """
        return [[out[i] for out in outputs] for i in range(len(sub.indices))]
