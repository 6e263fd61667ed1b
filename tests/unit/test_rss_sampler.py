"""The growth a hostile-traffic test reads: measured from after the settling second, so a
heap trim inside that second is not counted as the attack's growth (the CI failure of
nesting_bomb: RSS 942 MB at the first sample, 894 MB after a trim, 903 MB under the attack)."""

import os

from tests.support.reliability.rss_sampler import RssSampler

MB = 1 << 20


def test_growth_starts_after_the_baseline():
    sampler = RssSampler(os.getpid())
    sampler.samples = [(0.0, 942 * MB), (0.05, 894 * MB), (0.1, 894 * MB), (0.15, 894 * MB)]
    baseline = sampler.baseline(0)
    sampler.samples += [(0.2, 903 * MB), (0.25, 896 * MB)]
    assert baseline == 894 * MB
    assert sampler.peak_after_baseline() - baseline == 9 * MB
    assert sampler.peak() == 942 * MB  # the whole run's peak is still there for tables


def test_nothing_after_the_baseline_reads_as_no_peak():
    sampler = RssSampler(os.getpid())
    sampler.samples = [(0.0, 100 * MB)]
    sampler.baseline(0)
    assert sampler.peak_after_baseline() == 0
