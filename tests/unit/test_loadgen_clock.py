"""Regression: the open-loop dispatcher must never pass a negative delay to sleep."""

from client.loadgen import run_open_loop


class SteppingClock:
    """Every reading advances the clock, so a deadline can pass between two readings."""

    def __init__(self, step):
        self.t = 0.0
        self.step = step

    def __call__(self):
        self.t += self.step
        return self.t


def test_open_loop_sleep_is_never_negative():
    clock = SteppingClock(0.013)
    delays = []

    def sleep(seconds):
        assert seconds >= 0, seconds
        delays.append(seconds)

    result = run_open_loop(
        lambda: None, lambda client, i: None, rate=50, duration_s=1.0, max_requests=20, clock=clock, sleep=sleep
    )
    assert result.requests == 20 and delays
