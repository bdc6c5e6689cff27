"""The human table on stdout (`--format table`, the default): one line per case as it
finishes, failing checks under it, a summary line.

Every string is cleaned (`text.clean`) and no line is a workflow command (`text.inert`);
on GitHub Actions each chunk is also written between `::stop-commands::` and its token."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from harness.reporters.base import STDOUT, Output, Reporter
from harness.reporters.text import clean, clean_lines, command_token, inert, stop_commands

if TYPE_CHECKING:
    from harness.verdict import CaseReport, SuiteReport


def use_colour(stream: TextIO) -> bool:
    # no-color.org: only a non-empty NO_COLOR turns colour off.
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def render_case(case: CaseReport, colour: bool = False) -> str:
    icon = _paint("✓", "32", colour) if case.passed else _paint("✗", "31", colour)
    head = f"  {icon} {clean(case.id)} ({clean(case.fixture)})"
    if case.error is not None:
        first, *rest = clean_lines(case.error).split("\n")
        lines = [f"{head}  —  run error: {first}"]
        lines.extend(f"      {line}" for line in rest)
        return inert("\n".join(lines)) + "\n"
    passed = sum(g.passed for g in case.grades)
    lines = [f"{head}  {passed}/{len(case.grades)} checks"]
    for grade in case.failing_grades:
        first, *rest = clean_lines(grade.detail).split("\n")
        lines.append(f"      {_paint('✗', '31', colour)} {clean(grade.check)}: {first}")
        lines.extend(f"        {line}" for line in rest)
    return inert("\n".join(lines)) + "\n"


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
        f"  [{clean(report.kind)} suite, {clean(report.mode)}, agent {clean(report.agent)}: "
        f"exit {int(report.exit_code())}]"
    )
    return f"\n{inert(line)}\n"


def render_table(report: SuiteReport, colour: bool = False) -> str:
    return (
        "\n"
        + "".join(render_case(c, colour) for c in report.cases)
        + render_summary(report, colour)
    )


class TableReporter(Reporter):
    order = STDOUT

    def __init__(self, stream: TextIO, guard: bool = False) -> None:
        self._stream = stream
        self._colour = use_colour(stream)
        self._guard = guard  # on GitHub Actions, whose runner reads stdout for commands

    def start(self, total: int) -> None:
        self._stream.write("\n")

    def case_done(self, case: CaseReport) -> None:
        self._write(render_case(case, self._colour))

    def finish(self, report: SuiteReport) -> None:
        self._write(render_summary(report, self._colour))

    def _write(self, text: str) -> None:
        if self._guard:
            # A token of its own for each chunk: none printed earlier can end this one.
            text = stop_commands(text, command_token())
        self._stream.write(text)
        self._stream.flush()


class _Spec:
    name = "table"
    options = ()
    stdout_format = "table"

    def build(self, output: Output) -> list[Reporter]:
        if output.stdout_format != self.stdout_format:
            return []
        return [TableReporter(output.out(), guard=output.github)]


REPORTER = _Spec()
