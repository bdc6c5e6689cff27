"""`guardrails_tripped` and the fail-closed rule on tripwires a case does not name, graded
on records built by hand; admission of guardrail names; how reports show a tripwire."""

from __future__ import annotations

from conftest import expects

from harness.expectations.base import Context, Evidence
from harness.expectations.guardrails import Guardrails, describe, guardrail_name_problem
from harness.expectations.registry import assertion_count, grade, passes_empty_run
from harness.model_boundary import GuardrailRun
from harness.reporters.case_view import render_case
from harness.reporters.html_transcript import record_html
from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport

HOMEWORK = GuardrailRun(0, -1, "math_homework", "input", "triage", tripped=True, halted=True)
PASSED = GuardrailRun(0, -1, "no_passwords", "input", "triage")
REJECTED = GuardrailRun(
    1,
    0,
    "no_internal_orders",
    "tool_input",
    "triage",
    tripped=True,
    behavior="reject_content",
    tool="lookup_order",
    call_id="c1",
    message="Internal orders cannot be looked up.",
)


def grades_of(record: RunRecord, **fields: object) -> list[tuple[str, bool, str]]:
    return [(g.check, g.passed, g.detail) for g in grade(expects(**fields), record)]


def test_the_exact_ordered_list_passes_and_says_what_tripped() -> None:
    record = RunRecord(guardrails=[HOMEWORK, PASSED, REJECTED])
    ((check, passed, detail),) = grades_of(
        record, guardrails_tripped=["math_homework", "no_internal_orders"]
    )
    assert (check, passed) == ('guardrails_tripped(["math_homework", "no_internal_orders"])', True)
    assert detail.startswith('"math_homework" (input guardrail of agent "triage" in turn 0')


def test_another_order_or_a_missing_trip_fails_naming_what_tripped() -> None:
    record = RunRecord(guardrails=[HOMEWORK, REJECTED])
    ((_, passed, detail),) = grades_of(
        record, guardrails_tripped=["no_internal_orders", "math_homework"]
    )
    assert not passed
    assert detail.startswith(
        'guardrails_tripped: expected ["no_internal_orders", "math_homework"], the run tripped '
        '"math_homework"'
    )
    ((_, passed, detail),) = grades_of(RunRecord(guardrails=[PASSED]), guardrails_tripped=["x"])
    assert (passed, detail) == (False, 'guardrails_tripped: expected ["x"], no guardrail tripped')


def test_every_tripwire_a_case_does_not_name_is_a_failed_check_naming_it() -> None:
    record = RunRecord(final_response="ok", guardrails=[HOMEWORK, PASSED, REJECTED])
    got = grades_of(record, response_contains=["ok"])
    assert [(check, passed) for check, passed, _ in got] == [
        ('response_contains("ok")', True),
        ('guardrail_tripped("math_homework")', False),
        ('guardrail_tripped("no_internal_orders")', False),
    ]
    assert got[2][2] == (
        'unexpected tripwire: "no_internal_orders" (tool_input guardrail on tool "lookup_order" '
        '(call "c1") of agent "triage" in turn 1: reject_content, "Internal orders cannot be '
        'looked up."); a case that expects it names it in guardrails_tripped'
    )
    # A passing guardrail is no tripwire: nothing graded.
    assert (
        grades_of(RunRecord(final_response="ok", guardrails=[PASSED]), response_contains=["ok"])[1:]
        == []
    )


def test_the_rule_counts_no_assertion_and_an_empty_list_alone_is_vacuous() -> None:
    assert assertion_count(expects(response_contains=["ok"])) == 1
    assert assertion_count(expects(guardrails_tripped=[])) == 1
    assert passes_empty_run(expects(guardrails_tripped=[]), {})
    assert not passes_empty_run(expects(guardrails_tripped=["math_homework"]), {})


def test_names_are_checked_against_the_agents_guardrails_when_known() -> None:
    known = Context(agent="agent 'x'", guardrails=frozenset({"math_homework", "no_passwords"}))
    assert guardrail_name_problem("math_homework", known) is None
    assert guardrail_name_problem("math_homwork", known) == (
        "'math_homwork' is not a guardrail of agent 'x' (did you mean math_homework?); its "
        "guardrails: math_homework, no_passwords"
    )
    assert guardrail_name_problem("a", Context(agent="it", guardrails=frozenset())) == (
        "'a' is not a guardrail of it, which has none"
    )
    # Not known (an own loop): taken as it is, unless blank.
    assert guardrail_name_problem("anything", Context()) is None
    assert guardrail_name_problem(" ", Context()) == "empty or whitespace-only guardrail name"
    faults = list(Guardrails(guardrails_tripped=["ok", "math_homwork"]).problems(known))
    assert [f.path for f in faults] == [
        "$.expects.guardrails_tripped[0]",
        "$.expects.guardrails_tripped[1]",
    ]


def test_reports_show_each_tripwire() -> None:
    record = RunRecord(guardrails=[HOMEWORK, PASSED], turn_responses=[""])
    grades = list(Guardrails().grades(Evidence(record)))
    case = CaseReport.graded("c", "c.json", grades, record)
    shown = render_case(case)
    assert f"  guardrail tripped: {describe(HOMEWORK)}" in shown
    assert "no_passwords" not in shown
    html = "".join(record_html(record))
    assert "guardrail tripped: &quot;math_homework&quot; (input guardrail" in html
