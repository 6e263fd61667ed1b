"""What one run of the GPU probe measures: the full run (one GPU, at most 6 minutes) or
``--quick`` (the same steps, tiny, for a 2-core CPU machine in about 2 minutes).

Each step runs in a process of its own with its own time budget (:mod:`.probe_run`); the
budgets of the full run add up to the 6 minutes, so a step that hangs costs only its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

#: the steps, in the order they run (and are written)
STEPS = ("versions", "parity", "precision", "profile", "curves", "served")


@dataclass(frozen=True)
class ProbePlan:
    """Sizes, repetitions and time budgets of every step."""

    # parity and precision: fixed random inputs, per model (batch, and det's side)
    parity_batch: int
    det_side: int
    ernie_seq: int
    # precision: rec crops read at each precision (the committed rec crops, then crops of
    # the committed sample pages at PaddleOCR's boxes)
    rec_pages: tuple[int, ...]
    # profile: det's side and rec's batch for the one profiled call of each
    profile_rec_batch: int
    # curves: batch sizes, det's side and rec's widths, timed calls after warm-up calls
    det_sizes: tuple[int, ...]
    curve_det_side: int
    rec_sizes: tuple[int, ...]
    rec_widths: tuple[int, ...]
    curve_warmup: int
    curve_repeats: int
    # served: the sample pages sent, client levels, seconds measured (after warm-up) per level
    pages: tuple[int, ...]
    levels: tuple[int, ...]
    duration_s: float
    warmup_s: float
    max_batch_size: int | None
    # seconds each step may take (its process is stopped past it), and the whole run
    budgets_s: Mapping[str, float] = field(default_factory=dict)
    total_s: float = 360.0

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON values (``asdict`` cannot copy the read-only budgets)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**out, "budgets_s": dict(self.budgets_s)}

    def with_budgets(self, overrides: Mapping[str, float]) -> ProbePlan:
        return replace(self, budgets_s=MappingProxyType({**self.budgets_s, **overrides}))


# Budgets: a fresh process imports torch and starts CUDA (~5-10 s) before its step; the
# served step starts two servers (~20-30 s) and measures 2 pipelines x 2 levels x on/off.
FULL = ProbePlan(
    parity_batch=4,
    det_side=960,
    ernie_seq=128,
    rec_pages=tuple(range(12)),
    profile_rec_batch=8,
    det_sizes=(1, 2, 4, 8),
    curve_det_side=960,
    rec_sizes=(1, 8, 32, 64, 128),
    rec_widths=(320, 960),
    curve_warmup=3,
    curve_repeats=10,
    pages=tuple(range(12)),
    levels=(1, 32),
    duration_s=5.0,
    warmup_s=1.0,
    max_batch_size=None,
    budgets_s=MappingProxyType(
        {"versions": 20, "parity": 45, "precision": 60, "profile": 40, "curves": 85, "served": 110}
    ),
    total_s=360.0,
)
# 2 cores: det at 320 px, rec at one width, batches of at most 4, servers capped at 4, and
# 1 and 2 clients for 2 s (no warm-up: a short window on 2 cores may hold few answers).
# Budgets are generous: another test job may share the 2 cores.
QUICK = ProbePlan(
    parity_batch=2,
    det_side=320,
    ernie_seq=32,
    rec_pages=(4,),
    profile_rec_batch=8,
    det_sizes=(1, 2),
    curve_det_side=320,
    rec_sizes=(1, 4),
    rec_widths=(320,),
    curve_warmup=1,
    curve_repeats=2,
    pages=(4, 8),
    levels=(1, 2),
    duration_s=2.0,
    warmup_s=0.0,
    max_batch_size=4,
    budgets_s=MappingProxyType(
        {"versions": 60, "parity": 90, "precision": 120, "profile": 90, "curves": 90, "served": 150}
    ),
    total_s=600.0,
)
