"""Suite policy: a case's verdict from its attempts, and each kind's gate, as pure rules."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.errors import ExitCode
from harness.expectations.base import Grade
from harness.modes import SUITE_KINDS, SuiteKind
from harness.run_record import RunRecord
from harness.verdict.policy import POLICIES, Attempt, policy_for
from harness.verdict.reports import CaseReport, SuiteReport

PASS = Grade("ok", True, "found", "response")
FAIL = Grade("bad", False, "not found", "response")


@dataclass(frozen=True)
class Outcome:
    passed: bool
    error: str | None = None


PASSED, FAILED_CHECK, RUN_ERROR = Outcome(True), Outcome(False), Outcome(False, "boom")


def test_an_attempt_passes_only_with_grades_all_passing_and_no_error() -> None:
    assert Attempt([PASS, PASS]).passed
    assert not Attempt([PASS, FAIL]).passed
    assert not Attempt([]).passed  # asserting nothing never passes
    assert not Attempt([PASS], error="timed out").passed


@pytest.mark.parametrize("kind", SUITE_KINDS)
def test_a_case_passes_only_when_attempted_and_every_attempt_passed(kind: SuiteKind) -> None:
    policy = policy_for(kind)
    assert policy.case_passed([Attempt([PASS])])
    assert policy.case_passed([Attempt([PASS]), Attempt([PASS])])
    assert not policy.case_passed([Attempt([PASS]), Attempt([FAIL])])
    assert not policy.case_passed([])


@pytest.mark.parametrize(
    ("kind", "cases", "code"),
    [
        ("regression", [PASSED, PASSED], ExitCode.PASSED),
        ("regression", [PASSED, FAILED_CHECK], ExitCode.FAILED),
        ("regression", [PASSED, RUN_ERROR], ExitCode.FAILED),
        ("regression", [], ExitCode.FAILED),
        ("live", [PASSED], ExitCode.PASSED),
        ("live", [FAILED_CHECK], ExitCode.FAILED),
        ("live", [], ExitCode.FAILED),
        # Tracked, not gated: failed checks pass; a run error means nothing was measured.
        ("capability", [PASSED, FAILED_CHECK], ExitCode.PASSED),
        ("capability", [FAILED_CHECK, FAILED_CHECK], ExitCode.PASSED),
        ("capability", [PASSED, RUN_ERROR], ExitCode.FAILED),
        ("capability", [], ExitCode.FAILED),
    ],
)
def test_each_kind_gates_as_documented(
    kind: SuiteKind, cases: list[Outcome], code: ExitCode
) -> None:
    assert policy_for(kind).exit_code(cases) is code


def test_every_suite_kind_has_exactly_one_policy() -> None:
    assert tuple(POLICIES) == SUITE_KINDS
    assert all(POLICIES[kind].kind == kind for kind in SUITE_KINDS)


def test_the_suite_report_asks_its_kinds_policy() -> None:
    failing = CaseReport.graded("c", "c.json", [FAIL], RunRecord(), line=3)
    for kind, code in (("regression", 1), ("capability", 0), ("live", 1)):
        report = SuiteReport(suite="s", kind=kind, mode="replay", agent="a", cases=[failing])
        assert report.exit_code() == code
        assert int(report.exit_code()) == code


def test_a_passing_case_carries_no_failure_line() -> None:
    passing = CaseReport.graded("c", "c.json", [PASS], RunRecord(), line=7)
    assert passing.passed and passing.line is None
    failing = CaseReport.graded("c", "c.json", [PASS, FAIL], RunRecord(), line=7)
    assert not failing.passed and failing.line == 7 and failing.score == 0.5
