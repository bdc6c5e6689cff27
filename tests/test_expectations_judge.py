"""`harness.expectations.judge`: `expects.judge` rubrics admitted strictly, and graded from the
judge's verdicts (a rubric without one fails closed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import (
    MODES,
    admit,
    expects,
    record,
    refuse_one,
    refused,
    with_expects,
    write_fixture,
)

from harness.expectations.base import JudgeNote
from harness.expectations.registry import assertion_count, grade, passes_empty_run
from harness.verdict.policy import Attempt
from harness.verdict.reports import CaseReport


def rubric(**fields: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": "helpful", "rubric": "Answers the question.", "threshold": 0.7}
    found.update(fields)
    return found


@MODES
def test_a_rubric_list_is_admitted(tmp_path: Path, mode: str) -> None:
    data = with_expects(mode, {"judge": [rubric(), rubric(name="polite", include_transcript=True)]})
    case = admit(write_fixture(tmp_path, "case.json", data), mode)  # type: ignore[arg-type]
    assert case.trace.expects is not None
    assert [r.name for r in case.trace.expects.judge] == ["helpful", "polite"]


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (rubric(name=""), "name", "empty or whitespace-only rubric name"),
        (rubric(name="  "), "name", "empty or whitespace-only rubric name"),
        (rubric(rubric=" \n"), "rubric", "empty or whitespace-only rubric: it asks nothing"),
        (rubric(threshold=0), "threshold", "Expected `float` > 0.0"),
        (rubric(threshold=1.5), "threshold", "Expected `float` <= 1.0"),
        (rubric(threshold=-0.1), "threshold", "Expected `float` > 0.0"),
        (rubric(threshold="0.5"), "threshold", "Expected `float`, got `str`"),
        (rubric(samples=2), "samples", "2 is even: a strict majority of the samples needs an odd"),
        (rubric(samples=11), "samples", "Expected `int` <= 9"),
        (rubric(name="a\u202eb"), "name", None),
        (rubric(name="x" * 65), "name", "longer than 64 characters"),
    ],
)
def test_a_bad_rubric_is_refused_at_its_field(
    tmp_path: Path, entry: dict[str, Any], field: str, message: str | None
) -> None:
    data = with_expects("replay", {"judge": [entry]})
    path, problems = refused(tmp_path, data)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{path}: $.expects.judge[0].{field}: ")
    if message is not None:
        assert message in problems[0]


def test_an_unknown_key_in_a_rubric_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    entry = rubric()
    entry["treshold"] = entry.pop("threshold")
    _, problems = refused(tmp_path, with_expects("replay", {"judge": [entry]}))
    assert any("$.expects.judge[0]" in p and "treshold" in p for p in problems), problems


def test_missing_fields_are_refused(tmp_path: Path) -> None:
    _, problems = refused(tmp_path, with_expects("replay", {"judge": [{"name": "x"}]}))
    assert any("rubric" in p and "missing" in p.lower() for p in problems), problems


def test_duplicate_rubric_names_are_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_expects("replay", {"judge": [rubric(), rubric(rubric="Other text.")]}),
        "$.expects.judge[1].name",
        "duplicate rubric name 'helpful' (also $.expects.judge[0]): a verdict is kept by "
        "its rubric's name",
    )


# --- grading ---------------------------------------------------------------------------


def note(score: float | None, gated: bool = True, unknown: bool = False) -> JudgeNote:
    return JudgeNote(
        rubric="helpful",
        threshold=0.7,
        score=score,
        unknown=unknown,
        reason="it said so",
        gated=gated,
        why="calibrated",
    )


def test_each_rubric_is_one_assertion_that_an_empty_run_fails() -> None:
    e = expects(judge=[rubric(), rubric(name="polite")])
    assert assertion_count(e) == 2
    assert not passes_empty_run(e, {})


def test_a_rubric_without_a_verdict_fails_closed_and_gated() -> None:
    [g] = grade(expects(judge=[rubric()]), record("hi"))
    assert (g.check, g.passed, g.category, g.field) == (
        'judge("helpful")',
        False,
        "judge",
        "$.expects.judge[0]",
    )
    assert g.gates and g.fails
    assert "not judged" in g.detail


@pytest.mark.parametrize(
    ("verdict", "passed"),
    [(note(0.9), True), (note(0.7), True), (note(0.69), False), (note(None), False)],
)
def test_a_verdict_passes_at_its_threshold(verdict: JudgeNote, passed: bool) -> None:
    [g] = grade(expects(judge=[rubric()]), record("hi"), judged={"helpful": verdict})
    assert g.passed is passed
    assert g.judge == verdict


def test_unknown_never_passes_whatever_its_score() -> None:
    judged = {"helpful": note(1.0, unknown=True)}
    [g] = grade(expects(judge=[rubric()]), record("hi"), judged=judged)
    assert not g.passed
    assert "unknown" in g.detail


def test_the_detail_says_score_threshold_reason_and_gating() -> None:
    [g] = grade(expects(judge=[rubric()]), record("hi"), judged={"helpful": note(0.4, gated=False)})
    assert g.detail == "score 0.40 < threshold 0.70: it said so [diagnostic: calibrated]"


def test_a_diagnostic_grade_never_decides_a_case() -> None:
    e = expects(response_contains=["hi"], judge=[rubric()])
    grades = grade(e, record("hi"), judged={"helpful": note(0.1, gated=False)})
    assert Attempt(grades).passed
    report = CaseReport.graded("c", "c.json", grades, record("hi"))
    assert report.passed and report.score == 1.0
    assert report.failing_grades == [] and len(report.diagnostic_grades) == 1


def test_a_gated_failing_grade_fails_the_case() -> None:
    e = expects(response_contains=["hi"], judge=[rubric()])
    grades = grade(e, record("hi"), judged={"helpful": note(0.1)})
    assert not Attempt(grades).passed


def test_a_case_whose_only_checks_are_diagnostic_does_not_pass() -> None:
    grades = grade(expects(judge=[rubric()]), record("hi"), judged={"helpful": note(0.9, False)})
    report = CaseReport.graded("c", "c.json", grades, record("hi"))
    assert not report.passed
    assert report.first_failure() == (
        "no check decides the case: its judge grades are diagnostic (calibrated)"
    )
