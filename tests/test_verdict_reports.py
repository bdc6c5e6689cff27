"""`harness.verdict.reports`: a case's verdict and the suite's exit-code contract, totals
and score."""

from __future__ import annotations

import re

import msgspec
import pytest
from conftest import errored_report, failing_report, passing_report, suite_report

from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport

# --- the exit-code contract -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "cases", "code"),
    [
        ("regression", "all-pass", 0),
        ("regression", "failed-check", 1),
        ("regression", "run-error", 1),
        ("regression", "no-cases", 1),
        ("capability", "all-pass", 0),
        ("capability", "failed-check", 0),
        ("capability", "run-error", 1),
        ("capability", "no-cases", 1),
        ("live", "all-pass", 0),
        ("live", "failed-check", 1),
        ("live", "run-error", 1),
        ("live", "no-cases", 1),
    ],
)
def test_exit_code_contract(kind: str, cases: str, code: int) -> None:
    chosen = {
        "all-pass": [passing_report("a"), passing_report("b")],
        "failed-check": [passing_report("a"), failing_report("b")],
        "run-error": [passing_report("a"), errored_report("b")],
        "no-cases": [],
    }[cases]
    assert suite_report(kind, *chosen).exit_code() == code


def test_capability_run_error_gates_even_alongside_failed_checks() -> None:
    assert suite_report("capability", failing_report(), errored_report()).exit_code() == 1


def test_a_case_with_no_grades_never_passes() -> None:
    empty = CaseReport.graded("empty", "x.json", [], RunRecord())
    assert not empty.passed
    assert empty.score is None
    assert suite_report("regression", empty).exit_code() == 1


def test_totals_and_score() -> None:
    report = suite_report("regression", passing_report(), failing_report(), errored_report())
    t = report.totals
    assert (t.cases, t.passed, t.failed, t.errors) == (3, 1, 1, 1)
    assert failing_report().score == pytest.approx(1 / 3)
    assert errored_report().score is None
    assert not report.all_passed


def test_failure_parts_keep_the_count_apart_from_what_was_observed() -> None:
    bad = failing_report()
    assert bad.failure_parts() == (
        'tools_used("echo"): not called; tools called: []',
        " (+1 more failing check(s))",
    )
    assert bad.first_failure() == "".join(bad.failure_parts())
    err = errored_report()
    assert err.failure_parts() == (f"run error: {err.error}", "")
    empty = CaseReport.graded("empty", "x.json", [], RunRecord())
    assert empty.failure_parts() == ("the case produced no grades", "")


def test_every_doc_names_the_report_schema_the_reports_carry() -> None:
    from pathlib import Path

    from harness.verdict.reports import SCHEMA

    repo = Path(__file__).resolve().parents[1]
    docs = [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
    named = {
        (doc.name, found)
        for doc in docs
        for found in re.findall(r"zeroclaw-eval/report/v\d+", doc.read_text(encoding="utf-8"))
    }
    assert named, "no doc names the report schema"
    assert {found for _, found in named} == {SCHEMA}, sorted(named)


# --- the suite's statistics -----------------------------------------------------------------


@pytest.mark.parametrize(("passed", "failed"), [(21, 0), (2, 1)])
def test_a_deterministic_replay_has_no_interval_and_says_why(passed: int, failed: int) -> None:
    # Replay answers from the script: run again, the suite gives the same rate, so there is
    # no sampling an interval could be about (21/21 was "100 to 100%", 2/3 "0 to 100%").
    cases = [passing_report(f"p{i}") for i in range(passed)]
    cases += [failing_report(f"f{i}") for i in range(failed)]
    stats = suite_report("regression", *cases).statistics
    assert stats.pass_rate == pytest.approx(passed / (passed + failed))
    assert (stats.low, stats.high, stats.standard_error) == (None, None, None)
    assert stats.note == "no interval: a deterministic replay samples nothing"
    assert stats.cases == stats.units == passed + failed


def test_a_live_run_keeps_its_interval_and_says_what_it_rests_on() -> None:
    replay = suite_report("live", passing_report("a"), passing_report("b"), failing_report("c"))
    stats = msgspec.structs.replace(replay, mode="live").statistics
    assert stats.low is not None and stats.high is not None
    assert stats.low < stats.pass_rate < stats.high
    assert stats.note == "95% CI over 3 independent units (3 cases, 0 clusters)"
