"""Calibration: how far a rubric's judge agrees with people, with confidence bounds, and
whether that is enough for its grades to gate.

A rubric's figures come from labels: a person's pass or fail on a recorded verdict, given
without seeing the judge's. From them: the agreement with its 95% Wilson interval, Cohen's
κ (agreement beyond what the two pass rates alone would give) with its 95% interval, the
confusion matrix, and the false-pass rate (the share of the person's fails the judge
passed) with its 95% upper bound. The calibration file keeps the counts with the judge
setup's hash they were made under; whether they gate is decided at run time from the
counts and the configured `Bounds`, and only while the setup is the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

from harness.verdict.statistics import Z95, wilson

SCHEMA = "zeroclaw-eval/judge-calibration/v1"
# More labels than this are never worth computing towards: said as "more than".
_SEARCH_CAP = 100_000


class Bounds(msgspec.Struct, frozen=True):
    """What a rubric's calibration must show before its grades gate (the defaults are
    documented in docs/judge.md and set in `[tool.zeroclaw.eval]`)."""

    min_agreement_low: float = 0.80  # Wilson 95% lower bound of agreement
    min_kappa: float = 0.60  # Cohen's κ
    min_labels_per_verdict: int = 10  # labels of each human verdict, pass and fail
    max_false_pass_high: float = 0.25  # 95% upper bound of the false-pass rate
    max_flip_rate: float = 0.10  # re-asked verdicts that flipped, when measured


class Confusion(msgspec.Struct, frozen=True, kw_only=True):
    """Judge verdict against human label: `jp_hp` judge pass, human pass; `jp_hf` judge
    pass, human fail (a false pass); `jf_hp`; `jf_hf`."""

    jp_hp: int = 0
    jp_hf: int = 0
    jf_hp: int = 0
    jf_hf: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        """From (judge passed, human passed) pairs."""
        counts = [0, 0, 0, 0]
        for judge, human in pairs:
            counts[(0 if judge else 2) + (0 if human else 1)] += 1
        return cls(jp_hp=counts[0], jp_hf=counts[1], jf_hp=counts[2], jf_hf=counts[3])

    @property
    def n(self) -> int:
        return self.jp_hp + self.jp_hf + self.jf_hp + self.jf_hf

    @property
    def agree(self) -> int:
        return self.jp_hp + self.jf_hf

    @property
    def human_pass(self) -> int:
        return self.jp_hp + self.jf_hp

    @property
    def human_fail(self) -> int:
        return self.jp_hf + self.jf_hf


class Figures(msgspec.Struct, frozen=True):
    """What a confusion matrix says, with its 95% intervals."""

    n: int
    agreement: float
    agreement_interval: tuple[float, float]
    kappa: float
    kappa_interval: tuple[float, float]
    false_pass: float | None  # None: no human fail to measure it on
    false_pass_high: float


def figures(c: Confusion) -> Figures:
    n = c.n
    agreement = c.agree / n if n else 0.0
    kappa, interval = cohen_kappa(c)
    false_pass = c.jp_hf / c.human_fail if c.human_fail else None
    return Figures(
        n=n,
        agreement=agreement,
        agreement_interval=wilson(c.agree, n),
        kappa=kappa,
        kappa_interval=interval,
        false_pass=false_pass,
        false_pass_high=wilson(c.jp_hf, c.human_fail)[1],
    )


def cohen_kappa(c: Confusion) -> tuple[float, tuple[float, float]]:
    """Cohen's κ and its 95% interval (the large-sample standard error, Cohen 1960). When
    chance alone explains every agreement (one side gave a single verdict throughout) κ
    is 0: such labels cannot show that the judge tells pass from fail."""
    n = c.n
    if n == 0:
        return 0.0, (-1.0, 1.0)
    po = c.agree / n
    judge_pass = (c.jp_hp + c.jp_hf) / n
    human_pass = c.human_pass / n
    pe = judge_pass * human_pass + (1 - judge_pass) * (1 - human_pass)
    if pe >= 1:
        return 0.0, (0.0, 0.0)
    kappa = (po - pe) / (1 - pe)
    se = math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
    return kappa, (max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se))


def unmet(c: Confusion, bounds: Bounds, flip_rate: float | None = None) -> list[str]:
    """Every bound `c` does not meet, each saying by how much and how many more labels
    would be needed to meet it."""
    f = figures(c)
    found: list[str] = []
    for verdict, count in (("pass", c.human_pass), ("fail", c.human_fail)):
        if count < bounds.min_labels_per_verdict:
            more = bounds.min_labels_per_verdict - count
            found.append(
                f"{count} human {verdict} label(s), fewer than {bounds.min_labels_per_verdict}: "
                f"{more} more needed"
            )
    low = f.agreement_interval[0]
    if low < bounds.min_agreement_low:
        found.append(
            f"agreement {f.agreement:.2f} has a 95% lower bound of {low:.2f}, under "
            f"{bounds.min_agreement_low:.2f}: {_agreement_needed(c, bounds.min_agreement_low)}"
        )
    if f.kappa < bounds.min_kappa:
        found.append(
            f"Cohen's κ {f.kappa:.2f} is under {bounds.min_kappa:.2f}: more labels at the same "
            "rates do not raise κ; the judge must tell pass from fail better"
        )
    if f.false_pass_high > bounds.max_false_pass_high:
        found.append(
            f"false-pass rate {_rate(f.false_pass)} has a 95% upper bound of "
            f"{f.false_pass_high:.2f}, over {bounds.max_false_pass_high:.2f}: "
            f"{_false_pass_needed(c, bounds.max_false_pass_high)}"
        )
    if flip_rate is not None and flip_rate > bounds.max_flip_rate:
        found.append(
            f"flip rate {flip_rate:.2f} over {bounds.max_flip_rate:.2f}: re-asked, the judge "
            "changes its verdict too often"
        )
    return found


def _rate(value: float | None) -> str:
    return "unmeasured" if value is None else f"{value:.2f}"


def _more(extra: int | None) -> str:
    return "never" if extra is None else f"{extra} more"


def _search(meets: object) -> int | None:
    assert callable(meets)
    for extra in range(_SEARCH_CAP + 1):
        if meets(extra):
            return extra
    return None


def _agreement_needed(c: Confusion, bound: float) -> str:
    """More labels needed for the lower bound to reach `bound`: at the agreement observed,
    and at best (every new label agreeing)."""
    n, agree = c.n, c.agree
    rate = agree / n if n else 0.0
    # The lower bound stays under the rate itself: at a rate not above the bound, never.
    observed = (
        None
        if rate <= bound
        else _search(lambda m: wilson(agree + math.floor(rate * m), n + m)[0] >= bound)
    )
    best = _search(lambda m: wilson(agree + m, n + m)[0] >= bound)
    return (
        f"labels needed: {_more(observed)} at the observed agreement, "
        f"{_more(best)} if every new label agreed"
    )


def _false_pass_needed(c: Confusion, bound: float) -> str:
    """More human-fail labels needed for the upper bound to fall to `bound`."""
    fails, passed = c.human_fail, c.jp_hf
    rate = passed / fails if fails else 0.0
    observed = (
        None
        if rate >= bound
        else _search(lambda m: wilson(passed + math.ceil(rate * m), fails + m)[1] <= bound)
    )
    best = _search(lambda m: wilson(passed, fails + m)[1] <= bound)
    return (
        f"human-fail labels needed: {_more(observed)} at the observed rate, "
        f"{_more(best)} if the judge failed every new one"
    )


class RubricCalibration(msgspec.Struct, frozen=True, kw_only=True):
    """One rubric's calibration as the file keeps it: the counts, the judge setup's hash
    they were made under, and the figures (for people: gating reads the counts)."""

    rubric: str
    setup: str
    confusion: Confusion
    # The agent's model family the labels were made with, when the judge is of the same
    # family (a self-preference pairing); None: none was.
    pairing: str | None = None
    agreement: float = 0.0
    agreement_interval: tuple[float, float] = (0.0, 1.0)
    kappa: float = 0.0
    kappa_interval: tuple[float, float] = (-1.0, 1.0)
    false_pass: float | None = None
    false_pass_high: float = 1.0
    flip_rate: float | None = None  # re-asked verdicts that flipped (None: not measured)
    flip_samples: int = 0
    # The verbosity probe: padded passing answers whose score rose (None: not run).
    verbosity_rises: int | None = None


class CalibrationFile(msgspec.Struct, frozen=True, kw_only=True):
    schema: str = SCHEMA
    rubrics: dict[str, RubricCalibration] = {}


def calibrated(
    rubric: str,
    setup: str,
    confusion: Confusion,
    pairing: str | None = None,
    flip: tuple[float | None, int] = (None, 0),
    verbosity_rises: int | None = None,
) -> RubricCalibration:
    f = figures(confusion)
    return RubricCalibration(
        rubric=rubric,
        setup=setup,
        confusion=confusion,
        pairing=pairing,
        agreement=f.agreement,
        agreement_interval=f.agreement_interval,
        kappa=f.kappa,
        kappa_interval=f.kappa_interval,
        false_pass=f.false_pass,
        false_pass_high=f.false_pass_high,
        flip_rate=flip[0],
        flip_samples=flip[1],
        verbosity_rises=verbosity_rises,
    )


def gate(
    entry: RubricCalibration | None,
    setup: str,
    bounds: Bounds,
    same_family: str | None = None,
) -> tuple[bool, str]:
    """Whether a rubric's grades gate under judge setup `setup`, and why (or why not).
    `same_family`: the judge is of the live agent's model family (named): then only a
    calibration made on that pairing may gate."""
    if entry is None:
        return False, "no calibration for this rubric (zeroclaw eval calibrate)"
    if entry.setup != setup:
        return False, (
            "calibration is stale: the judge setup changed since it was made (provider, "
            "model, template, rubric text, threshold, parser or sampling)"
        )
    problems = unmet(entry.confusion, bounds, entry.flip_rate)
    if entry.verbosity_rises:
        problems.append(
            f"verbosity probe: padding raised the score of {entry.verbosity_rises} passing "
            "answer(s)"
        )
    if same_family is not None and entry.pairing != same_family:
        problems.append(
            f"self-preference: the judge is of the agent's model family ({same_family}) and "
            "was not calibrated on that pairing"
        )
    if problems:
        return False, "; ".join(problems)
    f = figures(entry.confusion)
    low, high = f.agreement_interval
    return True, (
        f"calibrated on {f.n} labels: agreement {f.agreement:.2f} [{low:.2f}, {high:.2f}], "
        f"κ {f.kappa:.2f}, false-pass upper bound {f.false_pass_high:.2f}"
    )
