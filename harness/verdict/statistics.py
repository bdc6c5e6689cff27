"""Statistics for repeated runs of eval cases: pure functions of counts and proportions.

One run of an agent is one draw from a distribution, so a case run n times is judged by its
pass proportion and how sure we may be of it:

* `wilson`: the Wilson score interval of a proportion (Wilson 1927, "Probable Inference, the
  Law of Succession, and Statistical Inference", JASA 22). Unlike the normal approximation it
  stays inside [0, 1] and does not collapse to zero width at 0/n or n/n.
* `pass_at_k`, `pass_hat_k`, `curves`: the unbiased estimators of pass@k (Chen et al. 2021,
  "Evaluating Large Language Models Trained on Code", arXiv:2107.03374) and pass^k (Yao et
  al. 2024, "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World Domains",
  arXiv:2406.12045).
* `clustered_interval`: the suite's pass rate with cluster-robust error bars (Miller 2024,
  "Adding Error Bars to Evals: A Statistical Approach to Language Model Evaluations",
  arXiv:2411.00640).
* `student_t`: the Student t quantile those error bars need, computed, not looked up.

Standard library only: the harness must not pull numerical packages into a CI job.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

import msgspec

Z95 = 1.959963984540054  # the standard normal's 0.975 quantile

# The continued fraction converges in well under a hundred terms for every degree of freedom
# the t quantile needs (b = 1/2); the cap only guards against a pathological argument.
_CF_MAX_TERMS = 10_000
_CF_EPS = 1e-16
_CF_TINY = 1e-300
_NEWTON_MAX_STEPS = 500
# Below this, lgamma's own rounding (about one ulp of lgamma(a)) is far under 1e-13; above
# it, the difference of two large lgamma values would cancel away the digits that matter.
_STIRLING_FROM = 50.0
_EXPANSION_FROM = 100_000


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a proportion; (0.0, 1.0) when n == 0. Clipped to [0,1].

    The interval is (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), Wilson (1927); see
    also Brown, Cai and DasGupta 2001, "Interval Estimation for a Binomial Proportion"."""
    if n < 0 or not 0 <= passes <= n:
        raise ValueError(f"wilson needs 0 <= passes <= n, got {passes}/{n}")
    if not math.isfinite(z) or z < 0:
        raise ValueError(f"wilson needs a finite z >= 0, got {z}")
    if n == 0:
        return (0.0, 1.0)
    p = passes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At 0/n and n/n the bound is exactly the observed proportion; rounding could otherwise
    # leave it a hair inside, and the interval would then exclude its own estimate.
    low = 0.0 if passes == 0 else max(0.0, min(p, centre - half))
    high = 1.0 if passes == n else min(1.0, max(p, centre + half))
    return (low, high)


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k)/C(n, k) (Chen et al. 2021, "Evaluating Large Language
    Models Trained on Code"), for 1 <= k <= n, 0 <= c <= n (ValueError otherwise). Exact with
    integer arithmetic (math.comb), returned as float.

    It is the chance that at least one of k runs drawn without replacement from the n passes."""
    _check_nck(n, c, k)
    total = math.comb(n, k)
    # int / int is correctly rounded however large the operands, so the one rounding is here.
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k = C(c, k)/C(n, k) (Yao et al. 2024, tau-bench): the chance that k runs
    drawn without replacement all pass. Same domain and exactness as `pass_at_k`."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def curves(n: int, c: int) -> tuple[list[float], list[float]]:
    """(pass@k for k=1..n, pass^k for k=1..n); ([], []) when n == 0.

    pass@k never falls and pass^k never rises as k grows: their gap is the case's flakiness."""
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"curves needs 0 <= c <= n, got c={c}, n={n}")
    ks = range(1, n + 1)
    return ([pass_at_k(n, c, k) for k in ks], [pass_hat_k(n, c, k) for k in ks])


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (Bessel, n-1); (0.0, 0.0) for no values, sd 0.0 for one.

    Two passes with `math.fsum` (Welford's single pass buys nothing for data already in
    memory), the mean refined once by the mean of its residuals (iterative refinement, as in
    Higham 2002, "Accuracy and Stability of Numerical Algorithms", ch. 12)."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0)
    mean = math.fsum(values) / n
    # fsum(values) / n rounds twice, so n copies of v can average to v plus an ulp or two; the
    # residuals are then exact and equal, and one correction lands on v, making sd exactly 0.
    mean += math.fsum(v - mean for v in values) / n
    if n == 1:
        return (mean, 0.0)
    squares = math.fsum((v - mean) ** 2 for v in values)
    return (mean, math.sqrt(squares / (n - 1)))


def flips(runs: Sequence[Mapping[str, bool]]) -> dict[str, int]:
    """Per check name, min(#runs where it passed, #runs where it failed), over the runs that have
    that check; only checks with a count > 0, sorted by name. Says which expectation flickers.

    The minimum is how many runs would have to change for the check to be steady."""
    counts: dict[str, list[int]] = {}
    for run in runs:
        for name, passed in run.items():
            counts.setdefault(name, [0, 0])[1 if passed else 0] += 1
    return {
        name: min(failed, passed)
        for name, (failed, passed) in sorted(counts.items())
        if min(failed, passed) > 0
    }


# --- the Student t quantile --------------------------------------------------------------


def _log_gamma_ratio_half(a: float) -> float:
    """ln Γ(a + 1/2) - ln Γ(a), accurate for every a > 0.

    For large a it is the difference of Stirling's series (Abramowitz and Stegun 1964, 6.1.41)
    taken term by term, with log1p, so that nothing large is subtracted from anything large."""
    if a < _STIRLING_FROM:
        return math.lgamma(a + 0.5) - math.lgamma(a)

    def series(x: float) -> float:
        x2 = x * x
        return (1 / 12 - (1 / 360 - (1 / 1260 - 1 / (1680 * x2)) / x2) / x2) / x

    # (a)ln(a+1/2) - (a-1/2)ln(a) - 1/2, rearranged around the cancelling terms.
    return 0.5 * math.log(a) + (a * math.log1p(0.5 / a) - 0.5) + series(a + 0.5) - series(a)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (Abramowitz and Stegun 1964, 26.5.8), by the
    modified Lentz method (Press et al., "Numerical Recipes", 3rd ed., section 6.4).

    It converges quickly for x < (a + 1) / (a + b + 2); the caller uses the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) to stay on that side."""

    def guard(v: float) -> float:
        # Lentz's method divides by these; a zero would stop it, a tiny value does not.
        return v if abs(v) >= _CF_TINY else _CF_TINY

    c = 1.0
    d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, _CF_MAX_TERMS + 1):
        m2 = 2 * m
        even = m * (b - m) * x / ((a - 1.0 + m2) * (a + m2))
        d = 1.0 / guard(1.0 + even * d)
        c = guard(1.0 + even / c)
        h *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2))
        d = 1.0 / guard(1.0 + odd * d)
        c = guard(1.0 + odd / c)
        step = d * c
        h *= step
        if abs(step - 1.0) < _CF_EPS:
            break
    return h


def _log_of(v: float, complement: float) -> float:
    """ln v, given also 1 - v: log1p of the complement keeps the digits when v is near 1."""
    return math.log(v) if v < 0.5 else math.log1p(-complement)


def _t_tail(t: float, df: int) -> float:
    """P(|T| > t) for Student's t with df degrees of freedom and t >= 0.

    It is the regularised incomplete beta I_x(df/2, 1/2) at x = df/(df + t²) (Abramowitz and
    Stegun 1964, 26.7.1 with 26.5.27). x and 1 - x are both formed directly, since for large df
    or small t one of them is too close to 1 to be recovered from the other."""
    if t <= 0.0:
        return 1.0
    a, b = df / 2.0, 0.5
    x = df / (df + t * t)
    y = t * t / (df + t * t)
    log_beta = 0.5 * math.log(math.pi) - _log_gamma_ratio_half(a)  # ln B(a, 1/2)
    log_front = a * _log_of(x, y) + b * _log_of(y, x) - log_beta
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def _t_density(t: float, df: int) -> float:
    log_norm = _log_gamma_ratio_half(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2.0 * math.log1p(t * t / df))


def _climb(
    tail: Callable[[float], float], density: Callable[[float], float], alpha: float
) -> float:
    """The x >= 0 with tail(x) = alpha, for a two-sided tail of a symmetric unimodal law.

    Newton's method from x = 0: such a tail is convex and falling for x > 0, so every step
    lands at or below the root and the iterates climb to it without overshooting."""
    x = 0.0
    for _ in range(_NEWTON_MAX_STEPS):
        step = (tail(x) - alpha) / (2.0 * density(x))
        x += step
        # In exact arithmetic every step is positive and shrinking; one that is not has hit
        # the rounding floor of the tail, and further steps would only wander in it.
        if step <= 1e-15 * x:
            break
    return x


def _normal_tail(z: float) -> float:
    return math.erfc(z / math.sqrt(2.0))


def _normal_density(z: float) -> float:
    return math.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)


def _t_expansion(df: int, alpha: float) -> float:
    """The t quantile for large df from the normal one, by the Cornish-Fisher expansion of
    Abramowitz and Stegun 1964, 26.7.5 (Fisher 1925), to the 1/df^3 term.

    Past `_EXPANSION_FROM` degrees of freedom the continued fraction's first terms cancel
    (1 - x is of order 1/df), while the expansion's first omitted term is below 1e-16 there
    for any confidence up to 0.999999."""
    z = _climb(_normal_tail, _normal_density, alpha)
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    return z + (g1 + (g2 + g3 / df) / df) / df


def student_t(df: int, confidence: float = 0.95) -> float:
    """The two-sided Student t quantile (e.g. df=1 -> 12.706, df=10 -> 2.228, df=30 -> 2.042,
    df=1000 -> ~1.962), computed (regularised incomplete beta via a continued fraction, then
    bisection or Newton), not a table; df >= 1 (ValueError otherwise).

    The t with P(|T| <= t) = confidence, found by Newton's method on the tail P(|T| > t);
    for df above 10^5 by the Cornish-Fisher expansion (see `_t_expansion`)."""
    if df < 1:
        raise ValueError(f"student_t needs df >= 1, got {df}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"student_t needs 0 < confidence < 1, got {confidence}")
    alpha = 1.0 - confidence
    if df > _EXPANSION_FROM:
        return _t_expansion(df, alpha)
    return _climb(lambda t: _t_tail(t, df), lambda t: _t_density(t, df), alpha)


# --- the suite's pass rate -----------------------------------------------------------------


class SuiteInterval(msgspec.Struct, frozen=True):
    """A suite pass rate with its confidence interval, and what the interval rests on."""

    estimate: float  # mean of the per-case proportions (0.0 when there are no cases)
    low: float | None  # None when unavailable
    high: float | None
    cases: int  # number of cases it rests on
    units: int  # independent units: clusters, each unlabelled case its own
    standard_error: float | None
    # e.g. "95% CI over 7 independent units (12 cases, 3 clusters)" or
    # "95% CI unavailable: fewer than two independent units"
    note: str

    @property
    def available(self) -> bool:
        return self.low is not None and self.high is not None


_UNAVAILABLE = "unavailable: fewer than two independent units"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _tallied(
    items: Iterable[tuple[str | None, float]],
) -> tuple[int, Counter[float], dict[str, Counter[float]]]:
    """How many items, and how often each pass proportion occurs among the unlabelled
    ones and within each cluster: a suite of any size is a few distinct proportions (a
    replay's are 0 and 1), so its sums are exact in a handful of rational operations,
    not a few per case."""
    n, alone, clusters = 0, Counter[float](), dict[str, Counter[float]]()
    # Counted as they come (in C), then each distinct item looked at once, in the order
    # it first came: the first bad proportion is still the one refused.
    for (label, share), times in Counter(items).items():
        if not (math.isfinite(share) and 0.0 <= share <= 1.0):
            raise ValueError(f"a case's pass proportion must be in [0, 1], got {share!r}")
        n += times
        (alone if label is None else clusters.setdefault(label, Counter()))[share] += times
    return n, alone, clusters


def _exact_sum(shares: Counter[float], minus: Fraction = Fraction(0)) -> Fraction:
    """The sum of each share less `minus`, exactly."""
    return sum(((Fraction(s) - minus) * k for s, k in shares.items()), Fraction(0))


def clustered_interval(
    items: Iterable[tuple[str | None, float]], confidence: float = 0.95
) -> SuiteInterval:
    """The suite's pass rate with a confidence interval that treats cases sharing a cluster
    label as one correlated unit: the cluster-robust standard error of the mean of Miller 2024
    ("Adding Error Bars to Evals", eq. for clustered standard errors):
        SE = sqrt( sum over clusters c of ( sum_{i in c} (s_i - mean) )^2 ) / n,
    with a small-sample correction factor sqrt(G/(G-1)) where G is the number of clusters, and the
    interval mean ± t(df = G-1) * SE, clipped to [0, 1]. `items` are (cluster label or None, the
    case's pass proportion in [0,1]). Unavailable (low/high/SE None) below two units. Never NaN
    (all-equal proportions give SE 0 and a zero-width interval; validate inputs are finite and in
    [0,1], ValueError otherwise).

    An unlabelled case is a cluster of one, so with no labels at all this is the ordinary
    standard error of the mean, sample sd / sqrt(n). The G/(G-1) factor and the G-1 degrees of
    freedom follow Cameron and Miller 2015, "A Practitioner's Guide to Cluster-Robust
    Inference" (J. Human Resources 50), for the few clusters an eval suite has."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n, alone, labelled = _tallied(items)
    level = f"{confidence * 100:g}% CI"
    if n == 0:
        return SuiteInterval(0.0, None, None, 0, 0, None, f"{level} {_UNAVAILABLE}")
    # Exact rationals: every s_i - mean is exact, so equal proportions leave no rounding
    # residue, the SE is exactly 0 and nothing can turn negative under the square root.
    mean = (_exact_sum(alone) + sum(map(_exact_sum, labelled.values()), Fraction(0))) / n
    clusters = len(labelled)
    g = sum(alone.values()) + clusters  # an unlabelled case is a unit of its own
    estimate = float(mean)
    if g < 2:
        return SuiteInterval(estimate, None, None, n, g, None, f"{level} {_UNAVAILABLE}")
    # Each unit's residual squared: a lone case's (s - mean)^2, a cluster's summed first.
    squares = sum(((Fraction(s) - mean) ** 2 * k for s, k in alone.items()), Fraction(0))
    squares += sum((_exact_sum(c, mean) ** 2 for c in labelled.values()), Fraction(0))
    spread = squares * g / (g - 1)
    se = math.sqrt(spread) / n
    half = student_t(g - 1, confidence) * se
    low = max(0.0, estimate - half)
    high = min(1.0, estimate + half)
    note = (
        f"{level} over {g} independent units ({_plural(n, 'case')}, {_plural(clusters, 'cluster')})"
    )
    return SuiteInterval(estimate, low, high, n, g, se, note)


def suspect_note(passes: int, n: int) -> str | None:
    """For 0 passes of n >= 5 completed runs: a note that the task (the fixture, the tools, the
    grader), not the agent, may be broken, e.g. "0/20 runs passed: a task no run passes is often
    a broken task (its fixture, tools or checks), not a weak agent"; None otherwise.

    Five is where even a 1-in-3 agent would have passed once with better than 85% odds."""
    if passes != 0 or n < 5:
        return None
    return (
        f"0/{n} runs passed: a task no run passes is often a broken task "
        "(its fixture, tools or checks), not a weak agent"
    )


# --- two proportions -----------------------------------------------------------------------


def fisher_one_sided(c1: int, n1: int, c2: int, n2: int) -> float:
    """The one-sided p-value of Fisher's exact test that the second proportion c2/n2 is
    lower than the first c1/n1 (Fisher 1935, "The Logic of Inductive Inference", JRSS 98):
    with the c1 + c2 successes fixed, the chance that the second group holds c2 or fewer
    of them, P(X <= c2) for X hypergeometric over n1 + n2 draws. 1.0 when a group is empty
    (no evidence either way); ValueError unless 0 <= c <= n for both.

    Exact: the tail is a sum of binomial coefficients (math.comb) divided once, so a small
    p-value is never lost to cancellation, however many runs there were."""
    for c, n in ((c1, n1), (c2, n2)):
        if n < 0 or not 0 <= c <= n:
            raise ValueError(f"fisher_one_sided needs 0 <= c <= n, got {c}/{n}")
    if n1 == 0 or n2 == 0:
        return 1.0
    successes = c1 + c2
    failures = n1 + n2 - successes
    # x successes of the second group, the rest of them in the first (at most n1 there).
    low = max(0, successes - n1)
    tail = sum(math.comb(successes, x) * math.comb(failures, n2 - x) for x in range(low, c2 + 1))
    return min(1.0, tail / math.comb(n1 + n2, n2))
