"""Expectations on what a run spent: tokens, wall-clock time, model calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import msgspec

from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, NonNegative, Strict
from harness.io.validation import Fault
from harness.run_record import RunRecord

Bound = Annotated[int, NonNegative] | None


# Keyword-only: the declaration order changed once, and a positional bound must never
# silently mean another.
class BudgetExpects(Strict, kw_only=True):
    """Inclusive upper bounds on what the run spent, declared in grading order (the
    original harness's: tokens, then wall clock, then model calls)."""

    max_input_tokens: Bound = None
    max_output_tokens: Bound = None
    max_total_tokens: Bound = None
    max_duration_ms: Bound = None
    max_llm_calls: Bound = None


BOUNDS: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(BudgetExpects))


def _spent(run: RunRecord) -> dict[str, float]:
    return {
        "max_input_tokens": run.input_tokens,
        "max_output_tokens": run.output_tokens,
        "max_total_tokens": run.input_tokens + run.output_tokens,
        "max_duration_ms": run.duration_ms,
        "max_llm_calls": run.model_calls,
    }


class Budget(Kind):
    """`budget`: each bound set is one check, `actual <= bound`."""

    order = 60
    budget: BudgetExpects | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        if self.budget is not None and not any(
            getattr(self.budget, name) is not None for name in BOUNDS
        ):
            yield Fault(
                f"{EXPECTS}.budget",
                "declares no bound: an empty budget asserts nothing; set at least one of "
                f"{', '.join(BOUNDS)}, or remove the block",
            )

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        if self.budget is None:
            return
        actual = _spent(evidence.record)
        for name in BOUNDS:
            bound = getattr(self.budget, name)
            if bound is None:
                continue
            value = actual[name]
            yield Grade(
                f"{name}({bound})",
                value <= bound,
                f"actual {_number(value)}",
                "budget",
                f"{EXPECTS}.budget.{name}",
            )


def _number(value: float) -> str:
    """An int as is; a measured float to 3 decimals, never rounded to look within a bound."""
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if "." in text else repr(value)
