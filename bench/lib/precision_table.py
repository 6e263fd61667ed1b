"""Rows and the printed table of bench/precision_profiles.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.ocr_accuracy import PageScore, ParityScore, accuracy_delta_interval, char_accuracy


@dataclass
class Row:
    name: str
    note: str = ""
    status: str = "measured"  # or "unavailable", "failed"
    reason: str = ""
    scores: list[PageScore] = field(default_factory=list)
    parity: ParityScore | None = None
    stage_ms: dict[str, float] = field(default_factory=dict)  # op -> ms per page
    ms_per_page: float | None = None

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def accuracy(self) -> float:
        return char_accuracy(self.scores)

    def to_dict(self, base: Row | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "note": self.note, "status": self.status}
        if not self.measured:
            return {**out, "reason": self.reason}
        out.update(
            char_accuracy=self.accuracy,
            chars=sum(s.chars for s in self.scores),
            errors=sum(s.errors for s in self.scores),
            missed_lines=sum(s.missed_lines for s in self.scores),
            extra_lines=sum(s.extra_lines for s in self.scores),
            stage_ms_per_page=self.stage_ms,
            ms_per_page=self.ms_per_page,
        )
        if self.parity is not None:
            out.update(
                parity=self.parity.rate,
                parity_without_spaces=self.parity.rate_without_spaces,
                box_shift_mean_px=self.parity.shift_mean,
                box_shift_p95_px=self.parity.shift_quantile(0.95),
                box_shift_max_px=self.parity.shift_max,
                reference_lines=self.parity.reference_lines,
                reference_lines_unpaired=self.parity.reference_lines - self.parity.paired,
                lines_unpaired=self.parity.extra_lines,
            )
        if base is not None and base.measured and base is not self:
            delta, low, high = accuracy_delta_interval(base.scores, self.scores)
            out.update(delta_vs_base=delta, delta_ci95=[low, high])
        return out


def pick(rows: Sequence[Row], base: Row) -> Row | None:
    """The fastest measured profile whose char accuracy is at least ``base``'s."""
    fit = [r for r in rows if r.measured and r.ms_per_page is not None and r.accuracy >= base.accuracy]
    return min(fit, key=lambda r: r.ms_per_page or 0.0, default=None)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def table(rows: Sequence[Row], base: Row, ops: Sequence[str]) -> str:
    """A Markdown table: accuracy, delta vs ``base`` (95% CI), parity, box shift, ms per op and page."""
    head = [
        "profile",
        "char acc",
        "Δ vs " + base.name + " (95% CI)",
        "parity",
        "parity w/o spaces",
        "box shift mean/p95/max",
    ]
    head += [f"{op} ms" for op in ops] + ["ms/page", "speed vs " + base.name]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if not r.measured:
            cells = [r.name, f"{r.status}: {r.reason}"] + [""] * (len(head) - 2)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        delta = ""
        if base.measured and r is not base:
            d, low, high = accuracy_delta_interval(base.scores, r.scores)
            delta = f"{100 * d:+.2f} ({100 * low:+.2f} .. {100 * high:+.2f})"
        p = r.parity
        speed = ""
        if base.ms_per_page and r.ms_per_page:
            speed = f"{base.ms_per_page / r.ms_per_page:.2f}x"
        cells = [
            r.name,
            _pct(r.accuracy),
            delta,
            _pct(p.rate) if p else "",
            _pct(p.rate_without_spaces) if p else "",
            f"{p.shift_mean:.2f} / {p.shift_quantile(0.95):.1f} / {p.shift_max:.0f} px" if p else "",
        ]
        cells += [f"{r.stage_ms[op]:.0f}" if op in r.stage_ms else "" for op in ops]
        cells += [f"{r.ms_per_page:.0f}" if r.ms_per_page else "", speed]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
