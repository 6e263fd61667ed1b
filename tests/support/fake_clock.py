"""A clock for unit tests: time stands still until the test moves it."""

from __future__ import annotations


class FakeClock:
    """Called like ``time.monotonic``; ``advance`` moves it on."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt
