"""The token and cost gates of a comparison with a baseline: a case (or the suite, summed
over the cases compared) whose tokens grew by more than a configured share over the
baseline's fails the gate, with the figures; in live mode, with a price for the model, the
same for cost. Only cases the comparison could compare count (not new, removed, run errors
or unverifiable ones: their tokens measure another case)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from harness.tracking.baseline import Baseline, BaselineCase, case_split, case_tokens
from harness.verdict.comparison import BaselineComparison, BudgetGates, Figure, Overrun, Price

if TYPE_CHECKING:
    from harness.verdict.reports import CaseReport, SuiteReport

# A share computed from floats: growth this close to the limit is at it, not over it.
_EPSILON = 1e-9


def gated(
    comparison: BaselineComparison, baseline: Baseline, report: SuiteReport, gates: BudgetGates
) -> BaselineComparison:
    """`comparison` with the overruns of `gates` and what they could not measure."""
    if not gates.active:
        return comparison
    compared = {c.id for c in comparison.cases if c.token_delta is not None}
    before = {c.id: c for c in baseline.cases}
    pairs = [(before[c.id], c) for c in report.cases if c.id in compared and c.id in before]
    overruns = list(_token_overruns(pairs, gates))
    notes: list[str] = []
    if gates.price is not None and (
        gates.max_cost_growth is not None or gates.max_suite_cost_growth is not None
    ):
        overruns += _cost_overruns(pairs, gates, gates.price, notes)
    unmeasured = [new.id for old, new in pairs if old.tokens == 0]
    if unmeasured and gates.max_token_growth is not None:
        notes.append(
            f"{len(unmeasured)} case(s) spent no tokens in the baseline: no share of 0 to "
            "measure their growth by"
        )
    return msgspec.structs.replace(comparison, overruns=overruns, budget_notes=notes)


def _over(
    figure: Figure, case: str | None, old: float, new: float, limit: float | None
) -> Iterator[Overrun]:
    if limit is not None and old > 0 and new / old - 1.0 > limit + _EPSILON:
        yield Overrun(figure=figure, case=case, before=old, now=new, limit=limit)


def _token_overruns(
    pairs: list[tuple[BaselineCase, CaseReport]], gates: BudgetGates
) -> Iterator[Overrun]:
    for old, new in pairs:
        yield from _over("tokens", new.id, old.tokens, case_tokens(new), gates.max_token_growth)
    old_sum = sum(old.tokens for old, _ in pairs)
    new_sum = sum(case_tokens(new) for _, new in pairs)
    yield from _over("tokens", None, old_sum, new_sum, gates.max_suite_token_growth)


def _cost_overruns(
    pairs: list[tuple[BaselineCase, CaseReport]],
    gates: BudgetGates,
    price: Price,
    notes: list[str],
) -> list[Overrun]:
    found: list[Overrun] = []
    old_sum = new_sum = 0.0
    unsplit = 0
    for old, new in pairs:
        if old.input_tokens is None or old.output_tokens is None:
            unsplit += 1
            continue
        was, now = price.of(old.input_tokens, old.output_tokens), price.of(*case_split(new))
        old_sum, new_sum = old_sum + was, new_sum + now
        found += _over("cost", new.id, was, now, gates.max_cost_growth)
    found += _over("cost", None, old_sum, new_sum, gates.max_suite_cost_growth)
    if unsplit:
        notes.append(
            f"{unsplit} case(s) have no input/output split in the baseline, so no cost: "
            "write the baseline again (--write-baseline) to gate their cost"
        )
    return found


def budget_lines(comparison: BaselineComparison) -> list[str]:
    """What the token and cost gates found, a line each, for the reports: each overrun
    (failing the gate), then what they could not measure."""
    grown = [f"over its gate, failing it: {o.describe()}" for o in comparison.overruns]
    return [*grown, *comparison.budget_notes]
