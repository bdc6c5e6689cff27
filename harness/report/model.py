"""Case and suite reports, and the exit-code contract as a pure function."""

from __future__ import annotations

import msgspec

from harness.grader import Grade
from harness.modes import SUITE_KINDS, SuiteKind
from harness.record import RunRecord

SCHEMA = "zeroclaw-eval/report/v1"


class CaseReport(msgspec.Struct, kw_only=True):
    id: str
    fixture: str
    passed: bool
    error: str | None = None
    traceback: str | None = None
    grades: list[Grade] = []
    score: float | None = None
    duration_ms: float = 0.0
    # Line in the fixture of what failed (the failing expectation, or the turn that
    # errored), for annotations; None for a passing case.
    line: int | None = None
    record: RunRecord | None = None

    @classmethod
    def graded(cls, id: str, fixture: str, grades: list[Grade], record: RunRecord) -> CaseReport:
        passed = bool(grades) and all(g.passed for g in grades)
        score = sum(g.passed for g in grades) / len(grades) if grades else None
        return cls(
            id=id,
            fixture=fixture,
            passed=passed,
            grades=grades,
            score=score,
            duration_ms=record.duration_ms,
            record=record,
        )

    @classmethod
    def errored(
        cls,
        id: str,
        fixture: str,
        error: str,
        record: RunRecord | None,
        traceback: str | None = None,
    ) -> CaseReport:
        return cls(
            id=id,
            fixture=fixture,
            passed=False,
            error=error,
            traceback=traceback,
            duration_ms=record.duration_ms if record else 0.0,
            record=record,
        )

    @property
    def failing_grades(self) -> list[Grade]:
        return [g for g in self.grades if not g.passed]

    def failure_lines(self) -> list[str]:
        """Each failing check with what was observed, as every report shows it."""
        return [f"{g.check}: {g.detail}" for g in self.failing_grades]


class Totals(msgspec.Struct):
    cases: int
    passed: int
    failed: int
    errors: int


class SuiteReport(msgspec.Struct, kw_only=True):
    suite: str
    kind: SuiteKind
    mode: str
    agent: str
    cases: list[CaseReport]
    duration_ms: float = 0.0

    @property
    def totals(self) -> Totals:
        passed = sum(c.passed for c in self.cases)
        errors = sum(c.error is not None for c in self.cases)
        return Totals(len(self.cases), passed, len(self.cases) - passed - errors, errors)

    @property
    def all_passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    def exit_code(self) -> int:
        """0 or 1 for this verdict; the process exit code of `zeroclaw eval run`.

        Regression and live suites pass only when every case passed. A capability suite is
        tracked, not gated: failed checks still exit 0, but a run error means the suite could
        not measure what it tracks, so it exits 1. An empty report never passes.
        """
        if not self.cases:
            return 1
        if self.kind == "capability":
            return int(any(c.error is not None for c in self.cases))
        return 0 if self.all_passed else 1


def resolve_kind(explicit: str | None, suite_dir: str) -> SuiteKind:
    """`--suite-kind`, else the suite directory's name when it is a kind, else regression."""
    if explicit is not None:
        for kind in SUITE_KINDS:
            if explicit == kind:
                return kind
        raise ValueError(f"unknown suite kind {explicit!r} (expected {', '.join(SUITE_KINDS)})")
    name = suite_dir.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    for kind in SUITE_KINDS:
        if name == kind:
            return kind
    return "regression"
