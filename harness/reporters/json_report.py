"""The versioned JSON report document: `--json-report PATH`, `--format json`."""

from __future__ import annotations

from pathlib import Path

import msgspec

from harness.modes import SuiteKind
from harness.options import Option
from harness.reporters.base import FILES, Output, Reporter, documents
from harness.verdict import SCHEMA, CaseReport, SuiteReport, Totals

OPTION = Option("--json-report", "also write the JSON report here", metavar="PATH", type=Path)


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
        exit_code=int(report.exit_code()),
        all_passed=report.all_passed,
        totals=report.totals,
        duration_ms=report.duration_ms,
        cases=report.cases,
    )
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


class _Spec:
    name = "json"
    options = (OPTION,)
    stdout_format = "json"

    def build(self, output: Output) -> list[Reporter]:
        return documents(output, OPTION, self.stdout_format, render_json, FILES + 1)


REPORTER = _Spec()
