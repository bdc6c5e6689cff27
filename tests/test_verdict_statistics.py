"""The statistics of repeated runs, checked against brute force, closed forms and tables."""

from __future__ import annotations

import itertools
import math
import random
import statistics as stdlib_statistics
from fractions import Fraction

import pytest

from harness.verdict.statistics import (
    Z95,
    SuiteInterval,
    clustered_interval,
    curves,
    flips,
    mean_sd,
    pass_at_k,
    pass_hat_k,
    student_t,
    suspect_note,
    wilson,
)

# --- Wilson ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (1, 10, 0.0179, 0.4042),
        (0, 1, 0.0, 0.7935),
    ],
)
def test_wilson_known_values(passes: int, n: int, low: float, high: float) -> None:
    got = wilson(passes, n)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_is_exact_at_the_ends_and_uninformative_without_runs() -> None:
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def test_wilson_z95_is_the_normal_quantile() -> None:
    assert stdlib_statistics.NormalDist().inv_cdf(0.975) == pytest.approx(Z95, abs=1e-15)


@pytest.mark.parametrize("n", range(1, 41))
def test_wilson_contains_the_proportion_and_mirrors(n: int) -> None:
    for passes in range(n + 1):
        low, high = wilson(passes, n)
        assert 0.0 <= low <= passes / n <= high <= 1.0
        assert low < high
        mirror_low, mirror_high = wilson(n - passes, n)
        assert mirror_low == pytest.approx(1 - high, abs=1e-12)
        assert mirror_high == pytest.approx(1 - low, abs=1e-12)


def test_wilson_narrows_with_more_runs_and_widens_with_z() -> None:
    widths = [wilson(n // 2, n)[1] - wilson(n // 2, n)[0] for n in (10, 20, 40, 80, 160)]
    assert widths == sorted(widths, reverse=True)
    assert wilson(3, 10, z=0.0) == pytest.approx((0.3, 0.3))
    narrow, wide = wilson(3, 10, z=1.0), wilson(3, 10, z=2.576)
    assert wide[0] < narrow[0] < 0.3 < narrow[1] < wide[1]


@pytest.mark.parametrize(("passes", "n"), [(-1, 5), (6, 5), (0, -1), (1, 0)])
def test_wilson_rejects_impossible_counts(passes: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson(passes, n)


@pytest.mark.parametrize("z", [-1.0, math.nan, math.inf])
def test_wilson_rejects_a_bad_z(z: float) -> None:
    with pytest.raises(ValueError):
        wilson(1, 2, z)


# --- pass@k and pass^k ----------------------------------------------------------------------


def _brute(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """(share of k-subsets with a pass, share of k-subsets all passing), by enumeration."""
    outcomes = [True] * c + [False] * (n - c)
    random.Random(n * 100 + c).shuffle(outcomes)  # the order of runs must not matter
    subsets = list(itertools.combinations(outcomes, k))
    some = sum(any(s) for s in subsets)
    every = sum(all(s) for s in subsets)
    return Fraction(some, len(subsets)), Fraction(every, len(subsets))


@pytest.mark.parametrize("n", range(1, 11))
def test_pass_at_k_and_pass_hat_k_match_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            some, every = _brute(n, c, k)
            # Both sides are the exact rational correctly rounded, so they agree to the bit.
            assert pass_at_k(n, c, k) == float(some), (n, c, k)
            assert pass_hat_k(n, c, k) == float(every), (n, c, k)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 50, 200])
def test_pass_at_k_edge_cases(n: int) -> None:
    for k in range(1, n + 1):
        assert pass_at_k(n, 0, k) == 0.0
        assert pass_hat_k(n, 0, k) == 0.0
        assert pass_at_k(n, n, k) == 1.0
        assert pass_hat_k(n, n, k) == 1.0
    for c in range(n + 1):
        assert pass_at_k(n, c, n) == (1.0 if c > 0 else 0.0)
        assert pass_hat_k(n, c, n) == (1.0 if c == n else 0.0)
        assert pass_at_k(n, c, 1) == pass_hat_k(n, c, 1) == c / n


def test_pass_at_k_stays_exact_for_many_runs() -> None:
    # Floating products of ratios would drift here; the integer form cannot.
    assert pass_at_k(1000, 1, 1) == 1 / 1000
    assert pass_hat_k(1000, 999, 999) == 1 / 1000
    assert pass_at_k(1000, 500, 3) == float(1 - Fraction(500 * 499 * 498, 1000 * 999 * 998))


@pytest.mark.parametrize(
    ("n", "c", "k"), [(5, 2, 0), (5, 2, 6), (5, -1, 1), (5, 6, 1), (0, 0, 1), (3, 1, -1)]
)
def test_pass_at_k_rejects_out_of_range(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_curves_are_the_per_k_values() -> None:
    assert curves(0, 0) == ([], [])
    at, hat = curves(6, 4)
    assert at == [pass_at_k(6, 4, k) for k in range(1, 7)]
    assert hat == [pass_hat_k(6, 4, k) for k in range(1, 7)]
    assert hat == pytest.approx([4 / 6, 6 / 15, 4 / 20, 1 / 15, 0.0, 0.0])
    with pytest.raises(ValueError):
        curves(3, 4)
    with pytest.raises(ValueError):
        curves(-1, 0)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.8, 0.97])
def test_simulated_runs_give_monotone_curves(seed: int, p: float) -> None:
    rng = random.Random(seed)
    runs = [rng.random() < p for _ in range(20)]
    c = sum(runs)
    at, hat = curves(20, c)
    assert len(at) == len(hat) == 20
    assert all(a <= b for a, b in itertools.pairwise(at))
    assert all(a >= b for a, b in itertools.pairwise(hat))
    assert at[0] == hat[0] == c / 20
    assert all(h <= a for a, h in zip(at, hat, strict=True))
    assert at[-1] == (1.0 if c else 0.0)
    assert hat[-1] == (1.0 if c == 20 else 0.0)


# --- mean and standard deviation ------------------------------------------------------------


def test_mean_sd() -> None:
    assert mean_sd([]) == (0.0, 0.0)
    assert mean_sd([3.5]) == (3.5, 0.0)
    mean, sd = mean_sd([2, 4, 4, 4, 5, 5, 7, 9])
    assert mean == 5.0
    assert sd == pytest.approx(math.sqrt(32 / 7), rel=1e-15)
    mean, sd = mean_sd([0.1] * 7)
    assert mean == pytest.approx(0.1) and sd == 0.0  # exactly: equal values have no spread


def test_mean_sd_of_equal_values_is_exact() -> None:
    # A plain fsum(values) / n misses v by an ulp for about one draw in ten here.
    rng = random.Random(7)
    for _ in range(2000):
        v = rng.random() * rng.choice([1.0, 1e3, 1e-3, -7.0, 1e300])
        assert mean_sd([v] * rng.randint(2, 200)) == (v, 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_mean_sd_matches_the_standard_library(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.uniform(-1e3, 1e3) for _ in range(rng.randint(2, 60))]
    mean, sd = mean_sd(values)
    assert mean == pytest.approx(stdlib_statistics.fmean(values), rel=1e-12, abs=1e-12)
    assert sd == pytest.approx(stdlib_statistics.stdev(values), rel=1e-12)


# --- flips ----------------------------------------------------------------------------------


def test_flips_counts_the_minority_outcome_per_check() -> None:
    runs = [
        {"tool": True, "text": True, "json": False},
        {"tool": False, "text": True, "json": True},
        {"tool": True, "text": True},
        {"tool": False, "budget": False, "json": True},
        {"tool": True, "json": False},
    ]
    got = flips(runs)
    # tool: 3 passes, 2 failures; json: 2 and 2; text always passes; budget always fails.
    assert got == {"json": 2, "tool": 2}
    assert list(got) == sorted(got)


def test_flips_of_steady_or_no_runs_are_empty() -> None:
    assert flips([]) == {}
    assert flips([{"a": True}, {"a": True}, {"b": False}]) == {}
    assert list(flips([{"z": True, "a": True}, {"z": False, "a": False}])) == ["a", "z"]


# --- Student t ------------------------------------------------------------------------------

T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
    17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
    25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
    120: 1.980,
}  # fmt: skip


@pytest.mark.parametrize(("df", "value"), sorted(T975.items()))
def test_student_t_matches_the_table(df: int, value: float) -> None:
    assert round(student_t(df), 3) == value


@pytest.mark.parametrize(
    ("df", "confidence", "value"),
    [
        (1, 0.99, 63.657),
        (2, 0.99, 9.925),
        (5, 0.99, 4.032),
        (10, 0.99, 3.169),
        (30, 0.99, 2.750),
        (120, 0.99, 2.617),
        (1, 0.90, 6.314),
        (10, 0.90, 1.812),
        (3, 0.80, 1.638),
    ],
)
def test_student_t_at_other_confidences(df: int, confidence: float, value: float) -> None:
    assert round(student_t(df, confidence), 3) == value


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 0.999999, 1 - 1e-12])
def test_student_t_matches_closed_forms(confidence: float) -> None:
    alpha = 1 - confidence  # exact (Sterbenz), unlike 1 - confidence**2
    # df = 1 is Cauchy: P(|T| > t) = 1 - 2 atan(t) / pi. df = 2: P(|T| <= t) = t / sqrt(2 + t²).
    cauchy = 1 / math.tan(math.pi * alpha / 2)
    two = math.sqrt(2 * confidence**2 / (alpha * (2 - alpha)))
    assert student_t(1, confidence) == pytest.approx(cauchy, rel=1e-12)
    assert student_t(2, confidence) == pytest.approx(two, rel=1e-12)


def test_student_t_approaches_the_normal_quantile() -> None:
    ladder = [student_t(df) for df in (1, 2, 5, 30, 1000, 10**4, 10**5, 10**5 + 1, 10**6)]
    assert ladder == sorted(ladder, reverse=True)
    assert round(student_t(1000), 3) == 1.962
    assert round(student_t(10**6), 3) == 1.960
    for df in (10**9, 10**15, 10**40):
        assert student_t(df) == pytest.approx(Z95, abs=1e-8)
    # The t quantile exceeds the normal one by about z(z² + 1) / 4df for large df.
    excess = student_t(10**4) - Z95
    assert excess == pytest.approx(Z95 * (Z95**2 + 1) / 4e4, rel=1e-3)


def test_student_t_is_continuous_where_its_method_changes() -> None:
    for confidence in (0.9, 0.95, 0.99):
        below, above = student_t(10**5, confidence), student_t(10**5 + 1, confidence)
        assert 0 < below - above < 1e-9


@pytest.mark.parametrize(
    ("df", "confidence"), [(0, 0.95), (-3, 0.95), (5, 0.0), (5, 1.0), (5, 1.5), (5, math.nan)]
)
def test_student_t_rejects_bad_arguments(df: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        student_t(df, confidence)


# --- the clustered suite interval -----------------------------------------------------------


def test_no_cases_or_one_unit_has_no_interval() -> None:
    for items in (
        [],
        [(None, 0.5)],
        [("a", 0.5)],
        [("shared", s) for s in (0.0, 0.25, 1.0, 1.0, 0.5, 0.75)],
    ):
        got = clustered_interval(items)
        assert not got.available
        assert got.low is None and got.high is None and got.standard_error is None
        assert got.units == (1 if items else 0)
        assert got.cases == len(items)
        assert "unavailable" in got.note
    assert clustered_interval([]).estimate == 0.0
    shared = clustered_interval([("shared", 0.0), ("shared", 1.0), ("shared", 0.5)])
    assert shared.estimate == 0.5
    assert shared.note == "95% CI unavailable: fewer than two independent units"


def test_a_hand_computed_clustered_interval() -> None:
    items: list[tuple[str | None, float]] = [
        ("a", 1.0), ("a", 1.0), ("a", 0.5),
        ("b", 0.0), ("b", 0.0), ("b", 0.5),
        ("c", 0.5), ("c", 0.5),
        (None, 1.0), (None, 0.0), (None, 0.5), (None, 0.5),
    ]  # fmt: skip
    got = clustered_interval(items)
    # n = 12, mean = 6/12 = 0.5, G = 3 clusters + 4 unlabelled = 7 units.
    # Residual sums: a 2.5 - 1.5 = 1, b 0.5 - 1.5 = -1, c 1 - 1 = 0, singles 0.5, -0.5, 0, 0;
    # their squares sum to 2.5, times G/(G-1) = 7/6 gives 35/12, so SE = sqrt(35/12) / 12.
    se = math.sqrt(35 / 12) / 12
    t6 = 2.446912  # t(0.975, df 6)
    assert got.estimate == 0.5
    assert got.cases == 12 and got.units == 7
    assert got.standard_error == pytest.approx(se, rel=1e-14)
    assert got.low == pytest.approx(0.5 - t6 * se, abs=1e-6)
    assert got.high == pytest.approx(0.5 + t6 * se, abs=1e-6)
    assert got.low == pytest.approx(0.151758, abs=1e-6)
    assert got.available
    assert got.note == "95% CI over 7 independent units (12 cases, 3 clusters)"


def test_clustering_widens_the_interval_of_correlated_cases() -> None:
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    apart = clustered_interval([(None, v) for v in values])
    together = clustered_interval([("x" if v else "y", v) for v in values] + [(None, 0.5)])
    assert apart.units == 8 and together.units == 3
    assert together.standard_error is not None and apart.standard_error is not None
    assert together.standard_error > apart.standard_error


@pytest.mark.parametrize("seed", range(8))
def test_singleton_units_give_the_ordinary_mean_interval(seed: int) -> None:
    rng = random.Random(seed)
    values = [
        rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, rng.random()]) for _ in range(rng.randint(2, 40))
    ]
    n = len(values)
    if len(set(values)) == 1:
        values[0] = 1.0 - values[0]  # keep a nonzero spread
    # An unlabelled case and a case alone in its cluster are the same thing.
    for items in ([(None, v) for v in values], [(f"c{i}", v) for i, v in enumerate(values)]):
        got = clustered_interval(items)
        mean = stdlib_statistics.fmean(values)
        sem = stdlib_statistics.stdev(values) / math.sqrt(n)
        assert got.units == n
        assert got.estimate == pytest.approx(mean, rel=1e-15)
        assert got.standard_error == pytest.approx(sem, rel=1e-12)
        half = student_t(n - 1) * sem
        assert got.low == pytest.approx(max(0.0, mean - half), rel=1e-12, abs=1e-15)
        assert got.high == pytest.approx(min(1.0, mean + half), rel=1e-12)


def test_equal_proportions_give_a_zero_width_interval() -> None:
    for share in (0.0, 0.1, 1 / 3, 0.7, 1.0):
        items = [("a", share), ("a", share), (None, share), ("b", share), (None, share)]
        got = clustered_interval(items)
        assert got.standard_error == 0.0
        assert got.low == got.high == got.estimate == share


def test_the_interval_is_clipped_to_the_unit_interval() -> None:
    high = clustered_interval([(None, 1.0), (None, 1.0), (None, 0.9)])
    assert high.high == 1.0 and high.low is not None and 0.0 < high.low < high.estimate
    low = clustered_interval([(None, 0.0), (None, 0.1), (None, 0.0)])
    assert low.low == 0.0 and low.high is not None and low.estimate < low.high < 1.0


@pytest.mark.parametrize("seed", range(30))
def test_never_nan_and_always_ordered(seed: int) -> None:
    rng = random.Random(seed)
    labels: list[str | None] = [None, "a", "b", "c"]
    items = [
        (rng.choice(labels), rng.choice([0.0, 1.0, 1e-300, 1 - 1e-16, rng.random()]))
        for _ in range(rng.randint(0, 25))
    ]
    got = clustered_interval(items, confidence=rng.choice([0.8, 0.95, 0.999]))
    assert math.isfinite(got.estimate) and 0.0 <= got.estimate <= 1.0
    if got.available:
        assert got.low is not None and got.high is not None and got.standard_error is not None
        assert all(math.isfinite(v) for v in (got.low, got.high, got.standard_error))
        assert 0.0 <= got.low <= got.estimate <= got.high <= 1.0
        assert got.standard_error >= 0.0
    else:
        assert got.units < 2


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    items = [(None, v) for v in (0.2, 0.4, 0.5, 0.6, 0.6, 0.7)]
    narrow, wide = clustered_interval(items, 0.8), clustered_interval(items, 0.99)
    assert narrow.low is not None and wide.low is not None
    assert narrow.high is not None and wide.high is not None
    assert wide.low < narrow.low < narrow.estimate < narrow.high < wide.high
    assert narrow.note.startswith("80% CI over 6 independent units (6 cases, 0 clusters)")
    assert clustered_interval([("a", 0.5), (None, 0.5)]).note.endswith("(2 cases, 1 cluster)")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.01, 1.01])
def test_bad_proportions_are_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        clustered_interval([(None, 0.5), ("a", bad)])


def test_the_first_bad_proportion_is_the_one_refused() -> None:
    # However often each comes, and whatever comes between: the first in the suite's order.
    items = [(None, 0.5), ("a", 1.0), ("a", 1.5), (None, -0.25), ("a", 1.5), (None, 0.5)]
    with pytest.raises(ValueError, match=r"got 1\.5$"):
        clustered_interval(items)
    with pytest.raises(ValueError, match=r"got -0\.25$"):
        clustered_interval([(None, 1.0)] * 3 + items[3:] + items[:3])


@pytest.mark.parametrize("confidence", [0.0, 1.0, math.nan, 95.0])
def test_bad_confidence_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError):
        clustered_interval([(None, 0.5), (None, 0.25)], confidence)


def test_suite_interval_availability() -> None:
    assert SuiteInterval(0.5, 0.25, 0.75, 4, 4, 0.1, "").available
    assert not SuiteInterval(0.5, None, None, 1, 1, None, "").available


# --- suspect note ---------------------------------------------------------------------------


def test_suspect_note() -> None:
    assert suspect_note(0, 4) is None
    assert suspect_note(1, 5) is None
    assert suspect_note(0, 0) is None
    note = suspect_note(0, 5)
    assert note is not None and note.startswith("0/5 runs passed")
    assert suspect_note(0, 20) == (
        "0/20 runs passed: a task no run passes is often a broken task "
        "(its fixture, tools or checks), not a weak agent"
    )


def _interval_case_by_case(
    items: list[tuple[str | None, float]], confidence: float = 0.95
) -> tuple[float, float | None, float | None, int, int, float | None, str]:
    """The clustered interval as it was first written, a unit per case held in a dict: the
    reference the tallied form (a few distinct proportions, not a unit per case) must equal
    to the last bit."""
    n = len(items)
    level = f"{confidence * 100:g}% CI"
    mean = sum((Fraction(s) for _, s in items), Fraction(0)) / n
    units: dict[object, Fraction] = {}
    for index, (label, share) in enumerate(items):
        key: object = ("cluster", label) if label is not None else ("case", index)
        units[key] = units.get(key, Fraction(0)) + (Fraction(share) - mean)
    g = len(units)
    clusters = len({label for label, _ in items if label is not None})
    estimate = float(mean)
    if g < 2:
        return estimate, None, None, n, g, None, f"{level} unavailable"
    spread = sum((r * r for r in units.values()), Fraction(0)) * g / (g - 1)
    se = math.sqrt(spread) / n
    half = student_t(g - 1, confidence) * se
    cases, groups = f"{n} case{'s' if n != 1 else ''}", f"{clusters} cluster"
    groups += "s" if clusters != 1 else ""
    note = f"{level} over {g} independent units ({cases}, {groups})"
    return estimate, max(0.0, estimate - half), min(1.0, estimate + half), n, g, se, note


@pytest.mark.parametrize("seed", range(40))
def test_the_tallied_interval_is_the_case_by_case_one_to_the_last_bit(seed: int) -> None:
    rng = random.Random(seed)
    shares = [0.0, 1.0, 0.5, 0.8, 1 / 3, 0.1, rng.random()]
    labels = [None, None, None, "a", "b", "c"]
    items = [(rng.choice(labels), rng.choice(shares)) for _ in range(rng.randint(2, 300))]
    found = clustered_interval(items)
    got = (found.estimate, found.low, found.high, found.cases, found.units, found.standard_error)
    expected = _interval_case_by_case(items)
    assert got == expected[:6]
    if found.low is not None:
        assert found.note == expected[6]
