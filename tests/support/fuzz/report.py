"""What a fuzz run found: statuses per category, problems, latency and
server RSS peaks; as text for people and as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Report:
    counts: dict[str, dict[int, int]] = field(default_factory=dict)  # category -> status -> n
    failures: list[tuple[str, int, str, str]] = field(default_factory=list)  # category, status, problem, body
    slowest: dict[str, float] = field(default_factory=dict)  # category -> max latency s
    rss_peak: dict[str, int] = field(default_factory=dict)  # category -> max server RSS after a case
    alive_problems: list[str] = field(default_factory=list)
    rss_before: int = 0
    rss_after: int = 0
    elapsed_s: float = 0.0

    def record(self, category: str, status: int, latency_s: float) -> None:
        counts = self.counts.setdefault(category, {})
        counts[status] = counts.get(status, 0) + 1
        self.slowest[category] = max(self.slowest.get(category, 0.0), latency_s)

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def by_status(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for c in self.counts.values():
            for s, n in c.items():
                out[s] = out.get(s, 0) + n
        return dict(sorted(out.items()))

    def ok(self) -> bool:
        return not self.failures and not self.alive_problems

    def to_json(self) -> dict:
        return {
            "counts": self.counts,
            "by_status": self.by_status(),
            "failures": self.failures,
            "alive_problems": self.alive_problems,
            "rss_before": self.rss_before,
            "rss_after": self.rss_after,
        }


def format_report(report: Report) -> str:
    lines = [
        f"{report.total} requests in {report.elapsed_s:.1f}s",
        "",
        f"{'category':28s} {'statuses':34s} {'max latency':>11s} {'peak RSS':>9s}",
    ]
    for cat in sorted(report.counts):
        statuses = " ".join(f"{s}x{n}" for s, n in sorted(report.counts[cat].items()))
        rss = f"{report.rss_peak[cat] / (1 << 20):.0f} MB" if cat in report.rss_peak else "-"
        lines.append(f"{cat:28s} {statuses:34s} {report.slowest[cat] * 1000:9.0f}ms {rss:>9s}")
    lines += ["", f"by status: {report.by_status()}"]
    if report.rss_before:
        lines.append(
            f"server RSS before {report.rss_before / (1 << 20):.1f} MB, after {report.rss_after / (1 << 20):.1f} MB"
        )
    lines.append(f"problems: {len(report.failures)}")
    seen = set()
    for cat, status, problem, body in report.failures:
        if (cat, status) in seen:
            continue
        seen.add((cat, status))
        lines.append(f"  {cat}: {problem}: {body[:160]!r}")
    lines += [f"  after the fuzz: {p}" for p in report.alive_problems] or [
        "after the fuzz: /health/ready 200, valid request answered correctly"
    ]
    return "\n".join(lines)
