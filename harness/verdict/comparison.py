"""The shape of a run compared with a baseline, case by case, as the verdict carries it
(`SuiteReport.baseline`); how the comparison is made is `harness.tracking.baseline`'s."""

from __future__ import annotations

from typing import Literal

import msgspec

Status = Literal[
    "new", "removed", "error", "unverifiable", "regression", "improvement", "unchanged"
]
STATUSES: tuple[Status, ...] = (
    "regression",
    "error",
    "unverifiable",
    "new",
    "removed",
    "improvement",
    "unchanged",
)


class CaseComparison(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    status: Status
    # A regression: whether it is confirmed (always, for single runs); None otherwise.
    confirmed: bool | None = None
    # The one-sided Fisher exact p-value of a regression with repeated runs.
    p_value: float | None = None
    categories: list[str] = []  # a regression's failing check categories
    token_delta: int | None = None  # this run's tokens minus the baseline's
    why: str = ""


class BaselineComparison(msgspec.Struct, kw_only=True, frozen=True):
    """A run against a baseline, case by case."""

    baseline: str  # the baseline file, as named
    level: float  # a drop over repeated runs is confirmed when p < level
    cases: list[CaseComparison]
    counts: dict[str, int]  # every status → how many cases have it
    confirmed_regressions: list[str] = []  # case ids
    unconfirmed_drops: list[str] = []  # case ids
    notes: list[str] = []  # what differs for the whole run (agent, suite, …)

    @classmethod
    def of(
        cls, baseline: str, level: float, cases: list[CaseComparison], notes: list[str]
    ) -> BaselineComparison:
        """The comparison of `cases`, its counts and lists of ids derived from them."""
        return cls(
            baseline=baseline,
            level=level,
            cases=cases,
            counts={s: sum(c.status == s for c in cases) for s in STATUSES},
            confirmed_regressions=[c.id for c in cases if c.confirmed is True],
            unconfirmed_drops=[c.id for c in cases if c.confirmed is False],
            notes=notes,
        )
