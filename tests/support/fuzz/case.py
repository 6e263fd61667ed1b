"""What a fuzz case is: the server limits it probes, the request it sends and
the statuses allowed in answer."""

from __future__ import annotations

from dataclasses import dataclass, field

ANY_4XX: tuple[int, ...] = ()  # as Case.expect: any 4xx will do


@dataclass
class Limits:
    """The server's limits, so that cases land just over them. The defaults are
    those of the fake-op server bench/fuzz.py starts (tests.support.image_fakes)."""

    max_body_size: int = 4 << 20
    max_inputs: int = 8
    max_image_pixels: int = 4_000_000
    priority_levels: int = 1


@dataclass
class Request:
    """What a case builder returns. ``expect`` (rarely set) narrows the
    category's allowed statuses for this one draw."""

    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    expect: tuple[int, ...] | None = None


@dataclass
class Case:
    """A request to send, its category and the statuses allowed in answer
    (``lenient``: a 200 is fine too, the input may still be a valid image)."""

    category: str
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    expect: tuple[int, ...] = ANY_4XX
    lenient: bool = False
