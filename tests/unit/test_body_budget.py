"""The body budget on its own (serving/service/body_budget.py): claims take all
or nothing, grow, give back exactly once, from any thread; its size from the
config (``http.max_buffered_mb``), and the config check that it holds a body."""

from __future__ import annotations

import textwrap
import threading

import pytest

from serving.config import ConfigError, load_repository, parse_config
from serving.config.file_set import repository_of
from serving.errors import Overloaded
from serving.service.body_budget import MIB, BodyBudget, buffered_bytes, default_buffered_bytes

FAKE = "tests.support.config_fakes:FakeOp"


def test_a_claim_takes_all_or_nothing_and_gives_back_once():
    budget = BodyBudget(100)
    first, second = budget.claim(), budget.claim()
    assert first.grow_to(60) and budget.held == 60
    assert not second.grow_to(60)  # does not fit: nothing taken
    assert budget.held == 60 and second.nbytes == 0
    assert second.grow_to(40) and budget.held == 100
    first.release()
    first.release()  # a second close of the same request gives back nothing more
    assert budget.held == 40
    second.release()
    assert budget.held == 0


def test_a_claim_grows_by_the_difference_and_never_shrinks_by_growing():
    budget = BodyBudget(100)
    claim = budget.claim()
    assert claim.grow_to(30) and claim.grow_to(80) and budget.held == 80
    assert claim.grow_to(50) and claim.nbytes == 80  # asking for less keeps what is held
    assert not claim.grow_to(101) and claim.nbytes == 80 and budget.held == 80
    claim.release()
    assert budget.held == 0


def test_resize_keeps_what_is_held():
    budget = BodyBudget(100)
    held = budget.claim()
    assert held.grow_to(90)
    budget.resize(50)
    assert budget.capacity == 50 and budget.held == 90
    assert not budget.claim().grow_to(1)
    held.release()
    assert budget.claim().grow_to(50)


def test_the_refusal_is_a_503_with_retry_after_naming_the_key():
    err = BodyBudget(3 * MIB).refusal()
    assert isinstance(err, Overloaded) and err.status == 503 and err.retry_after is not None
    assert "http.max_buffered_mb" in err.message and str(3 * MIB) in err.message


def test_claims_from_many_threads_never_overcommit_nor_leak():
    budget = BodyBudget(1000)
    peak = []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        for _ in range(2000):
            claim = budget.claim()
            if claim.grow_to(300):
                peak.append(budget.held)
                claim.release()
                claim.release()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.held == 0 and peak and max(peak) <= 1000


def test_the_size_a_config_sets():
    assert default_buffered_bytes(64 * MIB) == 256 * MIB  # the default max_body_size
    assert buffered_bytes(None, 10 * MIB) == 40 * MIB
    assert buffered_bytes(7, 10 * MIB) == 7 * MIB


# ---- http.max_buffered_mb in the config ---------------------------------------------------------
def config(http, max_body_size=None):
    op = {"class": FAKE}
    if max_body_size is not None:
        op["local_service_conf"] = {"max_body_size": max_body_size}
    return parse_config({"http": http, "op": {"a": op}}, source="c.yml")


def test_the_key_is_null_by_default_and_at_least_1():
    assert config({}).http.max_buffered_mb is None
    with pytest.raises(ConfigError) as info:
        config({"max_buffered_mb": 0})
    assert str(info.value).startswith("c.yml: http.max_buffered_mb: must be >= 1"), str(info.value)


def test_a_budget_below_one_body_fails_naming_the_key():
    with pytest.raises(ConfigError) as info:
        repository_of(config({"max_buffered_mb": 63}))  # the default max_body_size is 64 MiB
    assert "c.yml: http.max_buffered_mb: 63 MiB is less than one request body" in str(info.value)
    assert "at least 64" in str(info.value)
    assert repository_of(config({"max_buffered_mb": 64})).http.max_buffered_mb == 64
    assert repository_of(config({"max_buffered_mb": 1}, max_body_size=MIB)).http.max_buffered_mb == 1


def test_the_budget_must_hold_the_largest_body_of_every_file_served(tmp_path):
    def write(name, head, body):
        path = tmp_path / f"{name}.yml"
        conf = f"  a:\n    class: {FAKE}\n    local_service_conf: {{max_body_size: {body}}}\n"
        path.write_text(textwrap.dedent(f"name: {name}\n{head}op:\n") + conf)
        return str(path)

    small = write("small", "http: {max_buffered_mb: 2}\n", MIB)
    large = write("large", "", 3 * MIB)
    with pytest.raises(ConfigError) as info:
        load_repository([small, large])
    assert f"{small}: http.max_buffered_mb: 2 MiB" in str(info.value) and large in str(info.value)


def test_a_claim_shrinks_to_what_a_message_turned_out_to_hold():
    budget = BodyBudget(10)
    claim = budget.claim()
    assert claim.grow_to(10)  # taken before the message's size is known
    claim.shrink_to(3)
    assert budget.held == 3
    assert budget.claim().grow_to(7)
    claim.shrink_to(5)  # never grows
    assert budget.held == 10
    claim.release()
    assert budget.held == 7


def test_a_claim_waits_for_room_given_back_or_gives_up_after_its_timeout():
    budget = BodyBudget(10)
    first = budget.claim()
    assert first.grow_to(8)
    waiting = budget.claim()
    assert not waiting.grow_within(5, timeout_s=0.02) and waiting.nbytes == 0  # nothing held while it waited
    got = []
    thread = threading.Thread(target=lambda: got.append(waiting.grow_within(5, timeout_s=30)))
    thread.start()
    first.shrink_to(6)  # still no room for 5
    first.release()  # room: the waiting claim takes it
    thread.join(30)
    assert got == [True] and budget.held == 5
    waiting.release()
    assert budget.held == 0
