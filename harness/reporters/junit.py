"""JUnit XML through `junit-xml`: `--junit-xml PATH`, `--format junit`.

Each agent's results are their own: the agent is part of the suite name and the classname,
so the files two agents write for one suite never merge into one set of results. A
`<failure>`'s message is the first failing check with what was observed, an `<error>`'s the
first line of the run error, both clipped: annotations built from JUnit show the message
alone. Text is cleaned (`text.clean`, which also makes it legal XML 1.0), and no line of the
document is a workflow command (`text.inert_markup`), as it may be printed on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.options import Option
from harness.reporters.base import FILES, Output, Reporter, documents
from harness.reporters.text import brief, clean, clean_lines, headline, inert_markup

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport

OPTION = Option("--junit-xml", "also write JUnit XML here", metavar="PATH", type=Path)

MESSAGE_LIMIT = 500  # characters of a `message` attribute; the body has everything


def suite_label(report: SuiteReport) -> str:
    """The suite and the agent that ran it, as consumers keep them apart:
    `evals/regression[openai-agents]`."""
    return f"{clean(report.suite)}[{clean(report.agent)}]"


def render_junit(report: SuiteReport) -> bytes:
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    label = suite_label(report)
    cases = [_test_case(TestCase, label, case) for case in report.cases]
    suite = TestSuite(f"zeroclaw-eval:{label}", cases)
    xml: str = to_xml_report_string([suite], prettyprint=True, encoding="utf-8")
    return inert_markup(xml).encode("utf-8")


def _test_case(factory: type, classname: str, case: CaseReport) -> object:
    tc = factory(
        name=clean(case.id),
        classname=classname,
        elapsed_sec=case.duration_ms / 1000.0,
        file=clean(case.fixture),
        line=case.line,
    )
    if case.error is not None:
        message = headline(case.error, MESSAGE_LIMIT) or "run error"
        tc.add_error_info(message=message, output=clean_lines(case.error))
    elif not case.passed:
        body = "\n".join(case.failure_lines()) or "the case produced no grades"
        tc.add_failure_info(
            message=brief(case.failure_parts(), MESSAGE_LIMIT), output=clean_lines(body)
        )
    return tc


class _Spec:
    name = "junit"
    options = (OPTION,)
    stdout_format = "junit"

    def build(self, output: Output) -> list[Reporter]:
        return documents(output, OPTION, self.stdout_format, render_junit, FILES)


REPORTER = _Spec()
