"""`harness.tracking.trend`: a verdict that flipped with its judge (a rubric's setup or its
gate changed between two runs) is the judge's change, never the agent's regression."""

from __future__ import annotations

from harness.tracking.trend import Run, flips

GATED = {"names-capital": "a1b2/gated"}


def run(verdict: str, judges: dict[str, dict[str, str]]) -> Run:
    return Run("2026-01-01T00:00:00Z", 1.0, 1, 1, {"case": verdict}, judges=judges)


def test_a_flip_under_the_same_judge_is_a_regression() -> None:
    [flip] = flips([run("passed", {"case": GATED}), run("failed", {"case": GATED})])
    assert flip.regression and flip.change == "regression"


def test_a_flip_when_the_judge_changed_is_not_a_regression() -> None:
    for now in ({"names-capital": "a1b2/diagnostic"}, {"names-capital": "c3d4/gated"}):
        [flip] = flips([run("passed", {"case": GATED}), run("failed", {"case": now})])
        assert not flip.regression and flip.change == "judge changed"


def test_a_case_without_judge_grades_flips_as_before() -> None:
    [flip] = flips([run("passed", {}), run("failed", {})])
    assert flip.regression
