"""The versioned JSON report document."""

from __future__ import annotations

import msgspec

from harness.modes import SuiteKind
from harness.report.model import SCHEMA, CaseReport, SuiteReport, Totals


class ReportDocument(msgspec.Struct, kw_only=True):
    schema: str
    suite: str
    kind: SuiteKind
    mode: str
    agent: str
    exit_code: int
    all_passed: bool
    totals: Totals
    duration_ms: float
    cases: list[CaseReport]


def render_json(report: SuiteReport) -> bytes:
    document = ReportDocument(
        schema=SCHEMA,
        suite=report.suite,
        kind=report.kind,
        mode=report.mode,
        agent=report.agent,
        exit_code=report.exit_code(),
        all_passed=report.all_passed,
        totals=report.totals,
        duration_ms=report.duration_ms,
        cases=report.cases,
    )
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"
