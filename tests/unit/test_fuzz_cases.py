"""The fuzz case table (tests/support/fuzz): deterministic per seed, every
category drawn, answers judged as the table says. No server."""

import json

from tests.support.fuzz.case import Case, Limits
from tests.support.fuzz.cases import CASES, generate
from tests.support.fuzz.checks import check

LIMITS = Limits(max_body_size=64 << 10, max_inputs=4, max_image_pixels=250_000)


def fingerprint(cases):
    return [(c.category, c.method, c.path, c.body, sorted(c.headers.items()), c.expect) for c in cases]


def test_table_names_are_unique_and_weights_positive():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert all(c.weight > 0 for c in CASES)


def test_every_category_comes_first_in_table_order_then_weighted_draws():
    cases = list(generate("img", LIMITS, len(CASES) + 40, seed=3))
    assert [c.category for c in cases[: len(CASES)]] == [c.name for c in CASES]
    assert {c.category for c in cases[len(CASES) :]} <= {c.name for c in CASES}


def test_same_seed_same_cases_other_seed_other_cases():
    a = fingerprint(generate("img", LIMITS, 60, seed=5, heavy=False))
    assert a == fingerprint(generate("img", LIMITS, 60, seed=5, heavy=False))
    assert a != fingerprint(generate("img", LIMITS, 60, seed=6, heavy=False))


def test_no_heavy_leaves_out_the_heavy_categories():
    heavy = {c.name for c in CASES if c.heavy}
    assert heavy
    assert not heavy & {c.category for c in generate("img", LIMITS, 200, seed=0, heavy=False)}


def test_cases_carry_the_table_statuses_or_a_narrower_set():
    table = {c.name: c for c in CASES}
    for case in generate("img", LIMITS, 150, seed=1, heavy=False):
        row = table[case.category]
        assert case.lenient == row.lenient
        assert set(case.expect) <= set(row.expect) or not row.expect, (case.category, case.expect)
        assert case.path.startswith("/"), case.path


def _answer(case, status, message="bad"):
    if case.path.endswith("/prediction"):
        return json.dumps({"err_no": status, "err_msg": message})
    return json.dumps({"error": {"status": status, "message": message}})


def test_check_judges_answers():
    case = Case("missing_keys", "POST", "/img/prediction", expect=(400,))
    assert check(case, 400, _answer(case, 400)) is None
    assert "server error" in check(case, 500, _answer(case, 500))
    assert "expected (400,)" in check(case, 413, _answer(case, 413))
    assert "without a JSON error message" in check(case, 400, "oops")
    assert "expected a 4xx" in check(case, 200, "{}")
    assert check(case, 0, "no HTTP answer") is not None
    lenient = Case("mutated_image", "POST", "/img/predict", lenient=True)
    assert check(lenient, 200, "{}") is None
    assert check(lenient, 400, _answer(lenient, 400)) is None
    assert check(lenient, 400, "{}") == "400 without a message"
