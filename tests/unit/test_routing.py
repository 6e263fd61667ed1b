"""Router: weighted version choice (sticky per key, exact round robin without)
and shadow sampling (hashed per key, exact share without)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from serving.batching.routing import Router

KEYS = [f"logid-{i}" for i in range(1000)]


# ---------------------------------------------------------------------------
# pick
# ---------------------------------------------------------------------------
def test_unkeyed_picks_split_exactly_by_weight():
    router = Router({1: 80, 2: 20})
    assert Counter(router.pick(None) for _ in range(1000)) == {1: 800, 2: 200}


def test_unkeyed_round_robin_is_smooth_and_exact_in_every_cycle():
    router = Router({1: 5, 2: 1, 3: 1})
    # nginx's smooth weighted round robin: the heavy version is spread out, not picked 5 times in a row
    assert [router.pick(None) for _ in range(7)] == [1, 1, 2, 1, 3, 1, 1]
    for _ in range(20):
        assert Counter(router.pick(None) for _ in range(7)) == {1: 5, 2: 1, 3: 1}


def test_empty_key_counts_as_no_key():
    router = Router({1: 80, 2: 20})
    assert Counter(router.pick("") for _ in range(100)) == {1: 80, 2: 20}


def test_keyed_picks_are_stable_per_key():
    router = Router({1: 80, 2: 20}, salt="ocr")
    first = [router.pick(k) for k in KEYS]
    for _ in range(3):
        assert [router.pick(k) for k in KEYS] == first
    # a fresh router (another process, a reload) sends each key to the same version
    assert [Router({2: 20, 1: 80}, salt="ocr").pick(k) for k in KEYS] == first


def test_keyed_picks_split_by_weight_over_distinct_keys():
    router = Router({1: 80, 2: 20}, salt="ocr")
    counts = Counter(router.pick(k) for k in KEYS)
    assert set(counts) == {1, 2}
    assert abs(counts[1] / len(KEYS) - 0.80) <= 0.05, counts


def test_salt_changes_which_keys_go_where():
    a = [Router({1: 50, 2: 50}, salt="ocr").pick(k) for k in KEYS]
    b = [Router({1: 50, 2: 50}, salt="ernie").pick(k) for k in KEYS]
    assert a != b


def test_weight_zero_is_never_picked():
    router = Router({1: 0, 2: 3, 3: 0, 4: 1})
    assert set(router.pick(None) for _ in range(400)) == {2, 4}
    assert set(router.pick(k) for k in KEYS) == {2, 4}
    only = Router({1: 0, 2: 7})
    assert {only.pick(None) for _ in range(50)} | {only.pick(k) for k in KEYS} == {2}


def test_weights_property_keeps_every_version_by_version():
    router = Router({3: 1, 1: 0, 2: 4})
    assert router.weights == {1: 0, 2: 4, 3: 1} and list(router.weights) == [1, 2, 3]
    router.weights[2] = 99  # a copy: the router is unchanged
    assert router.weights[2] == 4


@pytest.mark.parametrize(
    "weights",
    [{}, {1: 0}, {1: 0, 2: 0}, {1: -1, 2: 5}, {1: 1.5}, {1: True}, {"1": 3}],
)
def test_bad_weights_are_refused(weights):
    with pytest.raises(ValueError):
        Router(weights)


@pytest.mark.parametrize("sample", [-0.1, 1.5, float("nan"), "0.5", True])
def test_bad_shadow_sample_is_refused(sample):
    with pytest.raises(ValueError):
        Router({1: 1}, shadow_sample=sample)


# ---------------------------------------------------------------------------
# shadow
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sample, expected", [(0.5, 500), (0.2, 200), (0.05, 50), (1 / 3, 333), (0.999, 999)])
def test_unkeyed_shadow_share_is_exact(sample, expected):
    router = Router({1: 1}, shadow_sample=sample)
    decisions = [router.shadow(None) for _ in range(1000)]
    assert sum(decisions) == expected
    # spread out: every prefix has floor(n * sample) yeses
    running = 0
    for n, said in enumerate(decisions, 1):
        running += said
        assert running == int(n * sample + 1e-9), n


def test_shadow_zero_and_one():
    never, always = Router({1: 1}), Router({1: 1}, shadow_sample=1.0)
    assert not any(never.shadow(k) for k in [None, *KEYS])
    assert all(always.shadow(k) for k in [None, *KEYS])


def test_keyed_shadow_is_about_the_sample_and_stable_per_key():
    router = Router({1: 1}, shadow_sample=0.3, salt="ocr")
    first = [router.shadow(k) for k in KEYS]
    assert abs(sum(first) / len(KEYS) - 0.3) <= 0.05
    assert [router.shadow(k) for k in KEYS] == first
    assert [Router({1: 1}, shadow_sample=0.3, salt="ocr").shadow(k) for k in KEYS] == first


def test_keyed_shadow_is_independent_of_the_pick():
    """Shadowed keys are not all on one version: the two hashes are separate."""
    router = Router({1: 50, 2: 50}, shadow_sample=0.5, salt="ocr")
    shadowed = Counter(router.pick(k) for k in KEYS if router.shadow(k))
    assert min(shadowed.values()) > 0.35 * sum(shadowed.values()), shadowed


# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------
def test_concurrent_callers_keep_the_exact_split_and_share():
    router = Router({1: 80, 2: 20}, shadow_sample=0.25)
    threads_n, per_thread = 8, 500  # 4000 picks: 40 whole round-robin cycles
    picks: list[Counter] = [Counter() for _ in range(threads_n)]
    shadows = [0] * threads_n
    start = threading.Barrier(threads_n)

    def work(i: int) -> None:
        start.wait()
        for _ in range(per_thread):
            picks[i][router.pick(None)] += 1
            shadows[i] += router.shadow(None)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(picks, Counter()) == {1: 3200, 2: 800}
    assert sum(shadows) == 1000
