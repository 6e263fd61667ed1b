"""The op hook vocabulary: what an op implements, and nothing else.

An op turns one request's inputs into *items* (``expand``), prepares each item
(``preprocess``), lets the engine batch items across requests, packs a batch
into predictor feeds (``collate`` -> ``SubBatch``), runs them (``run``),
unpacks per-item outputs (``uncollate``), finishes each item (``postprocess``)
and folds a request's item results into one output (``merge``); a sink op's
``agree`` compares a shadow version's answer with the primary's. A per-item
hook that raises (:class:`BadRequest`, or anything) fails only its request.

Ops import this module only (the errors they may raise and the path helper are
re-exported here): ops know nothing about HTTP, the engine or how their
runners are built, and the engine nothing about OCR or ERNIE.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from serving.errors import BadRequest, InternalError, PayloadTooLarge, ServingError
from serving.paths import resolve_pkg_path

if TYPE_CHECKING:
    from serving.config.schema import OpConfig

__all__ = [
    "BadRequest",
    "InternalError",
    "NoParams",
    "Op",
    "OpContext",
    "PayloadTooLarge",
    "Runner",
    "ServingError",
    "SubBatch",
    "fields_agree",
    "resolve_pkg_path",
    "values_agree",
]

Feed = dict[str, np.ndarray]

# default tolerance of values_agree: float noise between two runs of one model
# (batch composition, thread count) is far below it, a real change far above
AGREE_TOLERANCE = 1e-6


def values_agree(a: Any, b: Any, *, rel_tol: float = AGREE_TOLERANCE, abs_tol: float = AGREE_TOLERANCE) -> bool:
    """Deep equality of two op outputs, floats within ``rel_tol``/``abs_tol``.

    Mappings agree with the same keys and agreeing values; lists and tuples
    (either, as JSON makes them) with the same length and agreeing items;
    numpy arrays (or an array and a list) with the same shape and close
    numbers, or equal non-numeric items; numbers (numpy scalars too) when
    close, NaN agreeing with NaN; bools, strings, None and anything else by
    ``==``.
    """
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _arrays_agree(a, b, rel_tol, abs_tol)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)) or a.keys() != b.keys():
            return False
        return all(values_agree(a[k], b[k], rel_tol=rel_tol, abs_tol=abs_tol) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))) or len(a) != len(b):
            return False
        return all(values_agree(x, y, rel_tol=rel_tol, abs_tol=abs_tol) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # an __eq__ that returns no truth value
        return False


def _field_values(output: Any, key: str) -> tuple[str, list[Any]] | None:
    """``output[key]`` of one answer, or of each line of a list of lines (None: neither shape)."""
    if isinstance(output, Mapping) and key in output:
        return "one", [output[key]]
    if isinstance(output, (list, tuple)) and all(isinstance(line, Mapping) and key in line for line in output):
        return "lines", [line[key] for line in output]
    return None


def fields_agree(primary: Any, shadow: Any, key: str) -> bool | None:
    """For ``Op.agree`` of ops whose answer is one mapping or a list of line
    mappings: whether ``key`` is the same in both (one answer), or in every
    line in the same order. None when either output is neither shape."""
    a, b = _field_values(primary, key), _field_values(shadow, key)
    if a is None or b is None:
        return None
    return a == b


def _arrays_agree(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    if not all(isinstance(v, (np.ndarray, list, tuple)) for v in (a, b)):
        return False
    try:
        x, y = np.asarray(a), np.asarray(b)
    except ValueError:  # a ragged list is no array
        return False
    if x.shape != y.shape:
        return False
    numeric = all(v.dtype.kind in "biuf" for v in (x, y))
    if numeric:
        return bool(np.allclose(x, y, rtol=rel_tol, atol=abs_tol, equal_nan=True))
    # strings, objects (e.g. an array of dicts): item by item
    return all(values_agree(p, q, rel_tol=rel_tol, abs_tol=abs_tol) for p, q in zip(x.ravel(), y.ravel()))


class Runner(Protocol):
    """One predictor instance: the engine runs at most one batch at a time on it.

    Built by :mod:`serving.runners` from ``local_service_conf`` or the op's
    :meth:`Op.model_factory`, or by an op's own :meth:`Op.create_runners`.
    ``input_names`` are the model's feed names."""

    input_names: list[str]

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]: ...

    def close(self) -> None: ...


class NoParams(BaseModel):
    """Default op-specific ``params`` schema: accepts no keys."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class SubBatch:
    """One predictor run: which items it holds (``indices`` into the list handed to
    ``collate``) and their padded feed. ``real_units``/``padded_units`` (e.g. pixels
    or tokens before and after padding) measure padding waste."""

    indices: list[int]
    feed: Feed
    real_units: int = 0
    padded_units: int = 0
    meta: Any = None  # op-private data for uncollate (e.g. per-item shapes)


@dataclass(frozen=True)
class OpContext:
    """What the engine hands an op at construction: its config entry (typed,
    validated) and its ``params`` validated against the op's ``Params``."""

    name: str
    conf: OpConfig
    params: BaseModel


def extent_input(image: str) -> str:
    """The input beside image input ``image`` that a model with masked padding takes: each
    item's unpadded height and width (``local_service_conf.mask_padding``)."""
    return image + "_extent"


class Op:
    """Base class for pipeline ops. Override the hooks you need.

    Class attributes:
      ``Params``      pydantic model validating ``op.<name>.params`` in config.
      ``input_kind``  for ops fed by the request: ``"image"`` or ``"text"``,
                      telling the HTTP layer how to decode request values.
      ``needs_model`` whether ``local_service_conf.model_config`` is required.
      ``pad_unit``    what :meth:`pad_extent` counts (``"pixels"``, ``"tokens"``);
                      None (the default): the op gives no item sizes, and
                      ``local_service_conf.max_batch_units`` is refused.
      ``extent_groups`` True if :meth:`collate` runs the items of one
                      :meth:`pad_extent` as one call and never pads an item past
                      its own extent (width or length buckets): the adaptive
                      policy then batches one extent at a time (docs/batching.md).
      ``feeds_extents`` True if, under ``local_service_conf.mask_padding``,
                      :meth:`collate` feeds ``<image input>_extent`` (each item's
                      unpadded height and width) beside the padded batch.
    """

    Params: ClassVar[type[BaseModel]] = NoParams
    input_kind: ClassVar[str | None] = None
    needs_model: ClassVar[bool] = True
    pad_unit: ClassVar[str | None] = None
    extent_groups: ClassVar[bool] = False
    feeds_extents: ClassVar[bool] = False

    def __init__(self, ctx: OpContext):
        self.ctx = ctx
        self.name = ctx.name
        self.conf = ctx.conf
        self.params: Any = (
            ctx.params if isinstance(ctx.params, self.Params) else self.Params.model_validate(ctx.params.model_dump())
        )

    # ---- what the answer holds ----------------------------------------
    @classmethod
    def answer_fields(cls, *, source: bool) -> Mapping[str, str]:
        """Fields every answer of this op holds when it ends its pipeline: name ->
        ``"BYTES"`` (a string) or ``"FP32"`` (a number). The Open Inference Protocol
        front ends offer each as a typed output beside the JSON ``result``, so this is
        read from the class, before any model loads. ``source``: whether the request
        feeds the op (an op fed by another may answer in another shape, e.g. ERNIE's
        lines). Default: none."""
        return {}

    # ---- life cycle -------------------------------------------------
    def load(self) -> None:
        """Read dictionaries, vocabularies etc. Called once before serving."""

    def create_runners(self, count: int) -> list[Runner] | None:
        """``count`` runners of the op's own making, or None (the default) for
        the predictors ``local_service_conf`` describes, built by the engine."""
        return None

    def model_factory(self) -> Callable[[int | None], Runner] | None:
        """The op's own model, if it is not a Paddle model: a picklable callable
        (a module-level function or class, or a ``functools.partial`` of one)
        that builds one instance on GPU ``device_id`` (None on CPU). The engine
        calls it once per instance, in a predictor process with
        ``instance_mode: process`` (supervised, ``max_rss_mb``), else in this
        process. None (the default): the model ``model_config`` names."""
        return None

    def warmup_items(self) -> list[Any]:
        """Preprocessed items covering the shapes worth warming (buckets)."""
        return []

    # ---- per request --------------------------------------------------
    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        """Request-level inputs -> item payloads. ``inputs`` is ``{"input": value}`` for ops
        fed by the request, else ``{upstream_op_name: upstream_output, ...}``. ``[]`` skips
        inference for this request (``merge`` is still called)."""
        return [inputs["input"]] if "input" in inputs else [dict(inputs)]

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        """Item results (in ``expand`` order) -> this op's output for the request."""
        return results[0] if len(results) == 1 else results

    def output_for(self, output: Any, consumers: Sequence[type[Op]]) -> Any:
        """This op's output as it leaves its process (the Ray backend's op replica) for
        ``consumers``, the classes of every op that takes it (never the answer's: a sink
        op is not asked). What no consumer reads may be left out, so that it is not
        copied across; what is kept must give the consumers the same results. Default:
        all of it."""
        return output

    # ---- shadow traffic -----------------------------------------------
    def agree(self, primary: Any, shadow: Any) -> bool:
        """Whether a shadow version's answer agrees with the primary's.

        Called for a sink op with its output (``merge``'s) for one request from
        each version; the share that agrees is exported per pipeline. Default:
        :func:`values_agree`. Override to compare what matters to users (the same
        text, the same label) rather than every score.
        """
        return values_agree(primary, shadow)

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> Any:
        return payload

    def postprocess(self, item: Any, output: Any) -> Any:
        return output

    def pad_extent(self, item: Any) -> tuple[int, ...]:
        """How large a preprocessed item is once padded, per padded dimension,
        in ``pad_unit``: e.g. ``(height, width)`` of an image after the op's
        bucket rounding, ``(tokens,)`` of a text after its length bucket.

        It sizes batches for ``max_batch_units``: the engine counts a batch as
        ``items x prod(largest extent per dimension)``, so the product of the
        extents must be in the units ``collate`` reports as ``padded_units``,
        and no sub-batch of ``collate`` may pad an item beyond the largest
        extent of the items handed to it. Needed when ``pad_unit`` is set."""
        raise NotImplementedError(f"op {self.name!r} sets pad_unit but does not implement pad_extent()")

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[Any]) -> list[SubBatch]:
        """Pack preprocessed items into one or more padded predictor feeds."""
        raise NotImplementedError(f"op {self.name!r} must implement collate()")

    def run(self, runner: Runner, feed: Feed) -> list[np.ndarray]:
        """Run one sub-batch on this instance's runner.

        A one-array feed goes to a one-input model whatever the input's name
        (exported models name it ``x``, ``image`` ...)."""
        names = runner.input_names
        if len(names) == 1 and len(feed) == 1 and names[0] not in feed:
            (array,) = feed.values()
            feed = {names[0]: array}
        return runner.run(feed)

    def uncollate(self, sub: SubBatch, outputs: list[np.ndarray]) -> list[Any]:
        """Per-item outputs of a sub-batch, in ``sub.indices`` order (default: one row of each output per item)."""
        n = len(sub.indices)
        short = [len(out) for out in outputs if len(out) < n]
        if short:
            raise InternalError(f"op {self.name!r}: the predictor returned {short[0]} rows for {n} items")
        return [[out[i] for out in outputs] for i in range(n)]
