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


Figure = Literal["tokens", "cost"]


class Overrun(msgspec.Struct, kw_only=True, frozen=True):
    """A figure of a case (or of the suite, `case` None) that grew over its baseline by
    more than the share its gate allows (`--max-token-growth` and the like): it fails the
    gate, with the figures."""

    figure: Figure
    case: str | None  # None: the suite's sum over the cases compared
    before: float  # tokens, or cost in the price table's currency
    now: float
    limit: float  # the share of `before` it may grow by (0.2: 20%)

    @property
    def growth(self) -> float:
        return self.now / self.before - 1.0

    def describe(self) -> str:
        scope = "the suite" if self.case is None else f"case {self.case!r}"
        if self.figure == "tokens":
            before, now = f"{self.before:.0f}", f"{self.now:.0f}"
        else:
            before, now = f"{self.before:.6g}", f"{self.now:.6g}"
        return (
            f"{scope}: {self.figure} {before} -> {now} (+{self.growth:.1%}), "
            f"over the {self.limit:.1%} allowed"
        )


class BaselineComparison(msgspec.Struct, kw_only=True, frozen=True):
    """A run against a baseline, case by case."""

    baseline: str  # the baseline file, as named
    level: float  # a drop over repeated runs is confirmed when p < level
    cases: list[CaseComparison]
    counts: dict[str, int]  # every status → how many cases have it
    confirmed_regressions: list[str] = []  # case ids
    unconfirmed_drops: list[str] = []  # case ids
    notes: list[str] = []  # what differs for the whole run (agent, suite, …)
    # The token and cost gates: what grew over its share (each fails the gate), and what a
    # gate could not measure (no baseline figure, no price for the model).
    overruns: list[Overrun] = []
    budget_notes: list[str] = []

    @classmethod
    def of(
        cls,
        baseline: str,
        level: float,
        cases: list[CaseComparison],
        notes: list[str],
        overruns: list[Overrun] | None = None,
        budget_notes: list[str] | None = None,
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
            overruns=overruns or [],
            budget_notes=budget_notes or [],
        )


class Price(msgspec.Struct, frozen=True):
    """What a model costs per million tokens, input and output (any one currency)."""

    input: float
    output: float

    def of(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


class BudgetGates(msgspec.Struct, frozen=True):
    """The shares a run's tokens and cost may grow by over the baseline (None: not gated),
    per case and for the suite; `price` is the run's model's (None: cost is not gated)."""

    max_token_growth: float | None = None
    max_suite_token_growth: float | None = None
    max_cost_growth: float | None = None
    max_suite_cost_growth: float | None = None
    price: Price | None = None

    @property
    def active(self) -> bool:
        return any(
            limit is not None
            for limit in (
                self.max_token_growth,
                self.max_suite_token_growth,
                self.max_cost_growth,
                self.max_suite_cost_growth,
            )
        )
