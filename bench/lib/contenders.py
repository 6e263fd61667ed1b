"""Contenders of a throughput comparison (bench/ocr_vs_peers.py): a server
driven by closed-loop clients, or a sequential loop (in this process or in a
RapidOCR loop process), each measured in rounds and pooled, with the text
of its answers on the bench pages."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Answers = list[list[str]]  # per page, its lines' text in the answer's reading order


@dataclass
class Contender:
    key: str  # results key, e.g. "rapidocr_ov_fp32_server"
    title: str  # table label
    run: Callable[[float, float], dict]  # (duration_s, warmup_s) -> result with "images" and "seconds"
    prime: Callable[[float], Any]  # unmeasured load for that many seconds
    answers: Callable[[int], Answers]  # its answers on the first n pages
    precision: str = ""
    layout: str = ""
    rounds: list[dict] = field(default_factory=list)

    def measure(self, duration_s: float, warmup_s: float) -> dict:
        result = self.run(duration_s, warmup_s)
        self.rounds.append(result)
        return result

    def rate(self) -> float | None:
        """Images/s over all rounds (all images / all measured seconds); None before any round."""
        seconds = sum(r["seconds"] for r in self.rounds)
        return sum(r["images"] for r in self.rounds) / seconds if seconds > 0 else None


def line_texts(lines: Sequence[dict]) -> list[str]:
    return [str(line["text"]) for line in lines]


def server_contender(
    key: str,
    title: str,
    url: str,
    name: str,
    payloads: Sequence[dict],
    clients: int,
    metrics: bool = True,
    precision: str = "",
    layout: str = "",
) -> Contender:
    """A server speaking batchline's protocol, ``clients`` closed-loop clients."""
    from bench.lib.measure import answered, closed_loop

    def run(duration_s: float, warmup_s: float) -> dict:
        r = closed_loop(url, name, payloads, clients, duration_s, warmup_s, metrics=metrics)
        return {**r, "images": answered(r), "seconds": r["duration_s"]}

    def answers(n: int) -> Answers:
        from client.pipeline_client import PipelineClient

        with PipelineClient(url, timeout=120) as client:
            return [line_texts(json.loads(client.predict_raw(name, p)["value"][0])) for p in payloads[:n]]

    return Contender(
        key,
        title,
        run,
        lambda s: closed_loop(url, name, payloads, clients, s, 0.0, metrics=False),
        answers,
        precision,
        layout,
    )


def loop_contender(
    key: str,
    title: str,
    page: Callable[[int], Any],
    pages: int,
    answers: Callable[[int], Answers],
    precision: str = "",
    layout: str = "",
) -> Contender:
    """A sequential loop in this process: ``page(i)`` reads page ``i % pages``."""
    from bench.lib.measure import time_loop

    def one(i: int) -> int:
        page(i % pages)
        return 1

    def run(duration_s: float, _warmup_s: float) -> dict:
        r = time_loop(one, duration_s, min_calls=max(1, pages // 4))
        return {**r, "images": r["items"]}

    return Contender(key, title, run, lambda s: time_loop(one, s), answers, precision, layout)


def rapid_loop_contender(loop: Any, pages: int) -> Contender:
    """RapidOCR's own loop in its process (bench.lib.rapidocr_peers.RapidLoop, ready)."""
    from client.stats import latency_summary

    def run(duration_s: float, _warmup_s: float) -> dict:
        r = loop.run(duration_s, max(1, pages // 4))
        latencies = r.pop("latencies_s")
        return {**r, "calls": r["items"], "latency_ms": latency_summary(latencies), "images": r["items"]}

    info = loop.info
    return Contender(
        f"{loop.spec.key}_loop",
        f"{loop.spec.title} loop",
        run,
        lambda s: loop.run(s, 1),
        lambda n: [line_texts(page) for page in loop.answers[:n]],
        "/".join(f"{k} {v}" for k, v in info["precisions"].items()),
        f"1x{info['threads']}",
    )
