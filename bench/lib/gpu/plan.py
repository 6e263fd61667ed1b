"""What one run of the GPU check measures: the full run (a GPU host, about 5 minutes)
or ``--quick`` (the same steps, tiny, for a 2-core CPU machine in about a minute)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Plan:
    """Sizes and durations of every step; ``pages``: the committed sample pages used (indices
    in tests/data/ocr/answers.json's sample set), for the lines, det's curve and the load."""

    pages: tuple[int, ...]
    det_sizes: tuple[int, ...]
    rec_sizes: tuple[int, ...]
    levels: tuple[int, ...]
    duration_s: float
    warmup_s: float
    curve_warmup: int
    curve_repeats: int
    # caps every op's max_batch_size in the served configs (None: as shipped)
    max_batch_size: int | None = None

    def with_levels(self, levels: str) -> Plan:
        """This plan with ``--levels 1,8``'s client levels (empty: unchanged)."""
        picked = tuple(int(x) for x in levels.split(",") if x.strip())
        return replace(self, levels=picked) if picked else self


# det's curve stops at 8 and rec's at 64: the shipped max_batch_size of each (configs/ocr_gpu.yml)
FULL = Plan(
    pages=tuple(range(12)),
    det_sizes=(1, 2, 4, 8),
    rec_sizes=(1, 2, 4, 8, 16, 32, 64),
    levels=(1, 8, 32, 64),
    duration_s=8.0,
    warmup_s=2.0,
    curve_warmup=3,
    curve_repeats=10,
)
# Two pages of 8 English and 6 Chinese lines (most of the set's one-line pages would check
# little). Batches of at most 4: a server warms up at its max_batch_size, and rec's 64 crops
# (twice, per rec stage) on 2 cores would take most of the minute the quick run has. No
# warm-up: a closed loop counts only requests started after it, and on 2 cores 8 clients'
# first OCR requests take longer than a short window, which would leave none counted.
QUICK = Plan(
    pages=(4, 8),
    det_sizes=(1, 2, 4),
    rec_sizes=(1, 2, 4),
    levels=(1, 8),
    duration_s=2.0,
    warmup_s=0.0,
    curve_warmup=1,
    curve_repeats=3,
    max_batch_size=4,
)
