"""The report of bench/ocr_vs_peers.py: one row per contender (images/s,
batchline's ratio to it, parity with PaddleOCR, char accuracy, precision,
layout) and the verdicts against the RapidOCR targets of issue 14."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.lib.contenders import Contender
from bench.lib.results import verdict


@dataclass(frozen=True)
class Quality:
    parity: float | None  # share of PaddleOCR's lines with identical text
    char_accuracy: float | None  # vs the rendered text


def fastest(contenders: Mapping[str, Contender], keys: Sequence[str]) -> Contender | None:
    """The contender among ``keys`` (those measured) with the most images/s."""
    measured = [contenders[k] for k in keys if k in contenders and contenders[k].rate()]
    return max(measured, key=lambda c: c.rate() or 0.0, default=None)


def _fmt(value: float | None, spec: str) -> str:
    width = int(spec.split(".")[0] or 0)
    return "n/a".rjust(width) if value is None else format(value, spec)


def table(contenders: Sequence[Contender], ours: Contender, quality: Mapping[str, Quality]) -> str:
    """Rows of images/s, ``ours`` / each, parity, char accuracy, precision and layout."""
    head = f"{'contender':36s} {'images/s':>8s} {'ours/it':>8s} {'parity':>7s} {'char acc':>8s}  precision; layout"
    rows = [head, "-" * len(head)]
    base = ours.rate()
    for c in contenders:
        rate, q = c.rate(), quality.get(c.key, Quality(None, None))
        ratio = base / rate if base and rate else None
        rows.append(
            f"{c.title:36s} {_fmt(rate, '8.2f')} {_fmt(ratio, '7.2f')}x {_fmt(q.parity, '7.3f')} "
            f"{_fmt(q.char_accuracy, '8.4f')}  {c.precision}; {c.layout}"
        )
    return "\n".join(rows)


@dataclass(frozen=True)
class Target:
    """``ours`` >= ``ratio`` x the faster of ``peers``, and a quality condition."""

    name: str
    ours: str
    peers: tuple[str, ...]
    ratio: float


def check(
    target: Target, contenders: Mapping[str, Contender], quality_ok: bool | None, quality_text: str
) -> tuple[float | None, str]:
    """(ratio, one report line with its MET / MISSED verdict); the verdict needs
    the ratio and ``quality_ok`` both; n/a when a side was not measured."""
    ours, peer = contenders.get(target.ours), fastest(contenders, target.peers)
    if ours is None or peer is None or not ours.rate() or not peer.rate():
        return None, f"{target.name}: n/a (not measured)"
    ratio = (ours.rate() or 0.0) / (peer.rate() or 1.0)
    met = verdict(ratio, target.ratio) == "MET" and bool(quality_ok)
    return ratio, (
        f"{target.name}: {ours.title} / {peer.title} (the faster of its server and loop) = {ratio:.2f}x "
        f"(target >= {target.ratio}; {quality_text}): {'MET' if met else 'MISSED'}"
    )
