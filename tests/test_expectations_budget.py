"""`harness.expectations.budget`: the `budget` expectation: admitted only with a real check
beside it, and graded with inclusive bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import (
    EMPTY_RUN,
    MODES,
    NO_BOUND,
    admit,
    expects,
    live_trace,
    only,
    refuse_one,
    shape_at,
    with_expects,
    write_fixture,
)

from harness.expectations.budget import BudgetExpects
from harness.expectations.registry import grade
from harness.run_record import RunRecord

# --- admission: expects.budget --------------------------------------------------------------------


@MODES
@pytest.mark.parametrize(
    "budget", [{}, {"max_total_tokens": None, "max_llm_calls": None}], ids=["empty", "nulls"]
)
def test_budget_without_a_bound_is_refused(
    tmp_path: Path, mode: str, budget: dict[str, Any]
) -> None:
    refuse_one(tmp_path, with_expects(mode, {"budget": budget}), "$.expects.budget", NO_BOUND, mode)


BOUNDS = [
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_llm_calls",
    "max_duration_ms",
]


@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "Expected `int` >= 0"),
        (1.5, "Expected `int | null`, got `float`"),
        (True, "Expected `int | null`, got `bool`"),
        ("10", "Expected `int | null`, got `str`"),
    ],
)
def test_budget_bound_must_be_a_non_negative_int(
    tmp_path: Path, bound: str, value: Any, message: str
) -> None:
    refuse_one(
        tmp_path,
        with_expects("live", {"budget": {bound: value}}),
        f"$.expects.budget.{bound}",
        message,
        "live",
    )


def test_budget_unknown_key_suggests_the_bound(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_expects("live", {"budget": {"max_tokens": 10}}),
        "$.expects.budget.max_tokens",
        "unknown key (did you mean max_total_tokens?)",
        "live",
    )


@pytest.mark.parametrize("bound", BOUNDS)
def test_budget_alone_passes_an_empty_run_and_is_refused(tmp_path: Path, bound: str) -> None:
    refuse_one(
        tmp_path, live_trace(expects={"budget": {bound: 100}}), "$.expects", EMPTY_RUN, "live"
    )


@MODES
@pytest.mark.parametrize("bound", BOUNDS)
def test_budget_with_a_real_check_is_admitted(tmp_path: Path, mode: str, bound: str) -> None:
    data = with_expects(mode, {"budget": {bound: 0}})
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.expects is not None
    assert case.trace.expects.budget == BudgetExpects(**{bound: 0})


# --- grading: budget ------------------------------------------------------------------------------


def run_with(**fields: Any) -> RunRecord:
    return RunRecord(**fields)


@pytest.mark.parametrize(
    ("bound", "fields", "actual"),
    [
        ("max_input_tokens", {"input_tokens": 100, "output_tokens": 7}, 100),
        ("max_output_tokens", {"input_tokens": 7, "output_tokens": 100}, 100),
        ("max_total_tokens", {"input_tokens": 60, "output_tokens": 40}, 100),
        ("max_llm_calls", {"model_calls": 100}, 100),
        ("max_duration_ms", {"duration_ms": 100.0}, 100),
    ],
)
@pytest.mark.parametrize(("limit", "passed"), [(100, True), (101, True), (99, False)])
def test_budget_bound_is_inclusive(
    bound: str, fields: dict[str, Any], actual: int, limit: int, passed: bool
) -> None:
    g = only(grade(expects(budget={bound: limit}), run_with(**fields)))
    assert shape_at(g) == (
        f"{bound}({limit})",
        passed,
        f"actual {actual}",
        "budget",
        f"$.expects.budget.{bound}",
    )


def test_budget_zero_passes_only_at_zero() -> None:
    e = expects(budget={"max_llm_calls": 0, "max_total_tokens": 0})
    assert all(g.passed for g in grade(e, RunRecord()))
    assert not any(g.passed for g in grade(e, run_with(model_calls=1, output_tokens=1)))


@pytest.mark.parametrize(
    ("duration", "shown"),
    [(12.25, "12.25"), (12.0004, "12.0004"), (12.123456, "12.123")],
)
def test_fractional_duration_is_shown_as_measured(duration: float, shown: str) -> None:
    # Never rounded so that it looks within the bound while it is over it.
    g = only(grade(expects(budget={"max_duration_ms": 12}), run_with(duration_ms=duration)))
    assert (g.passed, g.detail) == (False, f"actual {shown}")


def test_budget_grades_come_in_a_fixed_order() -> None:
    e = expects(
        budget={
            "max_llm_calls": 5,
            "max_duration_ms": 5000,
            "max_total_tokens": 10,
            "max_output_tokens": 5,
            "max_input_tokens": 5,
        }
    )
    grades = grade(e, run_with(input_tokens=4, output_tokens=7, model_calls=2, duration_ms=3.0))
    assert [(g.check, g.passed, g.detail) for g in grades] == [
        ("max_input_tokens(5)", True, "actual 4"),
        ("max_output_tokens(5)", False, "actual 7"),
        ("max_total_tokens(10)", False, "actual 11"),
        ("max_duration_ms(5000)", True, "actual 3"),
        ("max_llm_calls(5)", True, "actual 2"),
    ]


def test_budget_bounds_are_keyword_only() -> None:
    # The declaration order is the grading order; a positional bound could silently mean
    # another one, so there are none.
    import pytest

    from harness.expectations.budget import BudgetExpects

    with pytest.raises(TypeError):
        BudgetExpects(None, None, None, 5)  # type: ignore[misc]
    assert BudgetExpects(max_llm_calls=5).max_llm_calls == 5
