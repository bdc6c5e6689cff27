"""The human table on stdout (`--format table`, the default): one line per case as it
finishes, failing checks under it, a summary line."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from harness.reporters.base import STDOUT, Output, Reporter

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport


def use_colour(stream: TextIO) -> bool:
    # no-color.org: only a non-empty NO_COLOR turns colour off.
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def _inert(line: str) -> str:
    """A line of agent or model text that CI runners cannot read as a workflow command
    (they strip leading whitespace and act on any line starting with `::`)."""
    return f"| {line}" if line.lstrip().startswith("::") else line


def render_case(case: CaseReport, colour: bool = False) -> str:
    icon = _paint("✓", "32", colour) if case.passed else _paint("✗", "31", colour)
    head = f"  {icon} {case.id} ({case.fixture})"
    if case.error is not None:
        first, *rest = case.error.splitlines() or [""]
        lines = [f"{head}  —  run error: {first}"]
        lines.extend(f"      {_inert(line)}" for line in rest)
        return "\n".join(lines) + "\n"
    passed = sum(g.passed for g in case.grades)
    lines = [f"{head}  {passed}/{len(case.grades)} checks"]
    for grade in case.failing_grades:
        first, *rest = grade.detail.splitlines() or [""]
        lines.append(f"      {_paint('✗', '31', colour)} {grade.check}: {first}")
        lines.extend(f"        {_inert(line)}" for line in rest)
    return "\n".join(lines) + "\n"


def render_summary(report: SuiteReport, colour: bool = False) -> str:
    t = report.totals
    line = f"  {t.passed}/{t.cases} cases passed"
    if t.failed or t.errors:
        parts = [f"{t.failed} failed"] if t.failed else []
        parts += [f"{t.errors} run error(s)"] if t.errors else []
        line += f"  ({', '.join(parts)})"
    else:
        line += "  " + _paint("✓", "32", colour)
    line += (
        f"  [{report.kind} suite, {report.mode}, agent {report.agent}: "
        f"exit {int(report.exit_code())}]"
    )
    return f"\n{line}\n"


def render_table(report: SuiteReport, colour: bool = False) -> str:
    return (
        "\n"
        + "".join(render_case(c, colour) for c in report.cases)
        + render_summary(report, colour)
    )


class TableReporter(Reporter):
    order = STDOUT

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._colour = use_colour(stream)

    def start(self, total: int) -> None:
        self._stream.write("\n")

    def case_done(self, case: CaseReport) -> None:
        self._stream.write(render_case(case, self._colour))
        self._stream.flush()

    def finish(self, report: SuiteReport) -> None:
        self._stream.write(render_summary(report, self._colour))
        self._stream.flush()


class _Spec:
    name = "table"
    options = ()
    stdout_format = "table"

    def build(self, output: Output) -> list[Reporter]:
        if output.stdout_format != self.stdout_format:
            return []
        return [TableReporter(output.out())]


REPORTER = _Spec()
