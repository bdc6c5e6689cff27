"""JUnit XML through `junit-xml`, with text made legal XML 1.0 first: `--junit-xml PATH`,
`--format junit`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from harness.options import Option
from harness.reporters.base import FILES, Output, Reporter, documents

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport

OPTION = Option("--junit-xml", "also write JUnit XML here", metavar="PATH", type=Path)

# Anything outside XML 1.0's Char production is replaced, not dropped, so a reader can
# still see that something was there.
_ILLEGAL_XML = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


# A text line starting with `::` is a workflow command to a CI runner reading the document
# on stdout. Writing its first colon as a character reference keeps the parsed text the
# same while no line of the file starts with `::`.
_COMMAND_LINE = r"(?m)^([ \t]*):(?=:)"


def xml_safe(text: str) -> str:
    # Patterns compiled on first use (re caches them): `--help` imports this module.
    return re.sub(_ILLEGAL_XML, "\ufffd", text)


def render_junit(report: SuiteReport) -> bytes:
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    cases = [_test_case(TestCase, report.suite, case) for case in report.cases]
    suite = TestSuite(xml_safe(f"zeroclaw-eval:{report.suite}"), cases)
    xml: str = to_xml_report_string([suite], prettyprint=True, encoding="utf-8")
    return re.sub(_COMMAND_LINE, r"\1&#58;", xml).encode("utf-8")


def _test_case(factory: type, suite: str, case: CaseReport) -> object:
    tc = factory(
        name=xml_safe(case.id),
        classname=xml_safe(suite),
        elapsed_sec=case.duration_ms / 1000.0,
        file=xml_safe(case.fixture),
        line=case.line,
    )
    if case.error is not None:
        first = case.error.splitlines()[0] if case.error else "run error"
        tc.add_error_info(message=xml_safe(first), output=xml_safe(case.error))
    elif not case.passed:
        failing = case.failing_grades
        message = failing[0].check if failing else "no grades"
        body = "\n".join(case.failure_lines()) or "the case produced no grades"
        tc.add_failure_info(message=xml_safe(message), output=xml_safe(body))
    return tc


class _Spec:
    name = "junit"
    options = (OPTION,)
    stdout_format = "junit"

    def build(self, output: Output) -> list[Reporter]:
        return documents(output, OPTION, self.stdout_format, render_junit, FILES)


REPORTER = _Spec()
