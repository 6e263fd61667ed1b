"""Hostile traffic against a real server, measured as a container would see it.

Each :class:`Attack` is a handful of small requests sent at once, built the
way issue 25 found them to cost gigabytes: image bombs (all-zero RGBA PNGs of
40 M pixels, 8 and 16 bit, a few hundred KB on the wire) and JSON
amplification (a ``logid`` of 3 M zeros, a whitespace-laced base64 value, a
nesting bomb). :func:`run_attack` samples the server's resident memory,
children included, every 50 ms while the requests run and reports the growth
over the RSS just before. The bound of each attack is the issue's: image
bombs grow the server by at most 1.5 GB (or are refused with 413/503), body
amplification stays under 10x the body size. ``bench/hostile.py`` prints the
table; ``tests/e2e/test_hostile_traffic.py`` asserts it.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from tests.support.fuzz.malformed import png_with_header
from tests.support.reliability.rss_sampler import RssSampler

GB = 1 << 30
SAMPLE_S = 0.05
IMAGE_BOMB_BOUND = int(1.5 * GB)
AMPLIFICATION_BOUND = 10  # x the body size


def _paddle(values: list[str], logid: object = 1) -> bytes:
    return json.dumps({"key": ["image"] * len(values), "value": values, "logid": logid}).encode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class Attack:
    name: str
    what: str
    bodies: Callable[[], list[bytes]]  # one Paddle body per concurrent request
    bound: Callable[[list[bytes]], int]  # allowed RSS growth, bytes
    refused: tuple[int, ...]  # the statuses that count as a refusal; a 200 is always allowed for image bombs
    allow_ok: bool = False


def rgba_bombs() -> list[bytes]:
    """Three requests at once, each two all-zero 8-bit RGBA PNGs of 6324 x 6324 (40 M pixels)."""
    png = _b64(png_with_header(6324, 6324, bitdepth=8, color=6, rows=None))
    return [_paddle([png, png])] * 3


def rgba16_bombs() -> list[bytes]:
    """Two requests at once, each one all-zero 16-bit RGBA PNG of 6000 x 6000."""
    png = _b64(png_with_header(6000, 6000, bitdepth=16, color=6, rows=None))
    return [_paddle([png])] * 2


def gray_bombs() -> list[bytes]:
    """Six requests at once, each two all-zero 8-bit gray PNGs of 6324 x 6324: 1 byte a pixel
    decoded, so more fit the decode budget at once, and each becomes a BGR copy of 3 bytes a pixel."""
    png = _b64(png_with_header(6324, 6324, bitdepth=8, color=0, rows=None))
    return [_paddle([png, png])] * 6


def large_bodies() -> list[bytes]:
    """Four requests at once, each a 61.5 MiB body (an uncompressed 16 M-pixel RGB PNG, in base64)
    just under the default ``max_body_size``: what stored bodies cost, in waitress and the app."""
    png = _b64(png_with_header(4800, 3360, bitdepth=8, color=2, rows=None, level=0))
    return [_paddle([png])] * 4


def logid_list(image: bytes) -> Callable[[], list[bytes]]:
    """A 6 MB body whose ``logid`` is a list of 3 M zeros (with a valid image)."""
    return lambda: [_paddle([_b64(image)], logid=[0] * 3_000_000)]


def spaced_base64() -> list[bytes]:
    """A 15 MB base64 value of ``"AB AB AB ..."`` (valid base64 once its spaces go; not an image)."""
    return [_paddle(["AB " * 5_000_000])]


def nesting_bomb() -> list[bytes]:
    """4 MB of ``[[[[...``: orjson before 3.9.15 crashed the server on it."""
    return [b'{"key": ["image"], "value": ' + b"[" * (4 << 20) + b"}"]


def attacks(image: bytes) -> list[Attack]:
    """The attacks, with a valid ``image`` for the bodies that need one."""

    def amplification(bodies: list[bytes]) -> int:
        return AMPLIFICATION_BOUND * sum(len(b) for b in bodies)

    return [
        Attack("rgba_bombs", rgba_bombs.__doc__ or "", rgba_bombs, lambda b: IMAGE_BOMB_BOUND, (413, 503), True),
        Attack("rgba16_bombs", rgba16_bombs.__doc__ or "", rgba16_bombs, lambda b: IMAGE_BOMB_BOUND, (413, 503), True),
        Attack("gray_bombs", gray_bombs.__doc__ or "", gray_bombs, lambda b: IMAGE_BOMB_BOUND, (413, 503), True),
        Attack("large_bodies", large_bodies.__doc__ or "", large_bodies, lambda b: IMAGE_BOMB_BOUND, (503,), True),
        Attack(
            "logid_list", "A 6 MB body whose logid is a list of 3 M zeros", logid_list(image), amplification, (400, 413)
        ),
        Attack("spaced_base64", spaced_base64.__doc__ or "", spaced_base64, amplification, (400,)),
        Attack("nesting_bomb", nesting_bomb.__doc__ or "", nesting_bomb, amplification, (400,)),
    ]


@dataclass
class Outcome:
    attack: Attack
    body_bytes: int
    statuses: list[int]
    baseline: int  # RSS just before, bytes
    growth: int  # peak RSS while the requests ran, minus baseline
    bound: int  # the growth allowed, bytes
    seconds: float
    errors: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        found = list(self.errors)
        allowed = set(self.attack.refused) | ({200} if self.attack.allow_ok else set())
        wrong = [s for s in self.statuses if s not in allowed]
        if wrong:
            found.append(f"{self.attack.name}: statuses {self.statuses}, allowed {sorted(allowed)}")
        if self.growth > self.bound:
            found.append(
                f"{self.attack.name}: RSS grew {self.growth / (1 << 20):.0f} MB, bound {self.bound / (1 << 20):.0f} MB"
            )
        return found


def _post(url: str, body: bytes, timeout: float) -> int:
    try:
        return requests.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=timeout).status_code
    except requests.RequestException as exc:
        raise RuntimeError(f"no answer: {type(exc).__name__}: {exc}") from None


def run_attack(
    url: str, name: str, pid: int, attack: Attack, *, settle_s: float = 1.0, timeout: float = 120.0
) -> Outcome:
    """Send ``attack``'s requests at once to pipeline ``name`` and measure the server's RSS growth."""
    bodies = attack.bodies()
    target = f"{url}/{name}/prediction"
    statuses: list[int] = []
    errors: list[str] = []
    with RssSampler(pid, interval_s=SAMPLE_S) as sampler:
        baseline = sampler.baseline(settle_s)
        t0 = time.monotonic()
        with ThreadPoolExecutor(len(bodies)) as pool:
            for fut in [pool.submit(_post, target, b, timeout) for b in bodies]:
                try:
                    statuses.append(fut.result())
                except RuntimeError as exc:
                    errors.append(f"{attack.name}: {exc}")
        seconds = time.monotonic() - t0
        time.sleep(4 * SAMPLE_S)
    growth = max(0, sampler.peak_after_baseline() - baseline)
    body_bytes = sum(len(b) for b in bodies)
    return Outcome(attack, body_bytes, statuses, baseline, growth, attack.bound(bodies), seconds, errors)


def format_table(outcomes: list[Outcome]) -> str:
    rows = ["| attack | body | answers | RSS before | RSS growth | bound | time |", "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        rows.append(
            f"| {o.attack.name} | {o.body_bytes / (1 << 20):.1f} MB | {', '.join(map(str, o.statuses))} "
            f"| {o.baseline / (1 << 20):.0f} MB "
            f"| {o.growth / (1 << 20):.0f} MB ({o.growth / max(1, o.body_bytes):.1f}x body) "
            f"| {o.bound / (1 << 20):.0f} MB | {o.seconds:.1f} s |"
        )
    return "\n".join(rows)
