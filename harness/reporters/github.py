"""GitHub Actions workflow commands for failing cases and refused fixtures, escaped so no
text can forge one (`--annotations`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from harness.problems import Problem
from harness.reporters.base import ANNOTATIONS, CI, Output, Reporter

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

MAX_ANNOTATIONS = 10
MAX_PROBLEM_ANNOTATIONS = 50


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF encoded, so it stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(report: SuiteReport, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """`::error` commands for the worst `limit` failing cases, and a notice for the rest."""
    ranked = report.worst_first()
    commands = []
    for case in ranked[:limit]:
        props = [f"file={escape_property(case.fixture)}"]
        if case.line is not None:
            props.append(f"line={case.line}")
        props.append(f"title={escape_property(f'zeroclaw-eval: {case.id}')}")
        message = case.first_failure()
        if len(message) > 2000:
            message = message[:2000] + "…"
        commands.append(f"::error {','.join(props)}::{escape_data(message)}")
    if len(ranked) > limit:
        rest = len(ranked) - limit
        commands.append(
            f"::notice title=zeroclaw-eval::{rest} more failing case(s) not annotated; "
            "see the job summary or the JUnit report"
        )
    return commands


def problem_command(problem: Problem) -> str:
    """An `::error` command for one admission problem, at its field's line when admission
    found it."""
    props = [f"file={escape_property(problem.file)}"]
    if problem.line is not None:
        props.append(f"line={problem.line}")
    props.append(f"title={escape_property('zeroclaw-eval: fixture refused')}")
    return f"::error {','.join(props)}::{escape_data(f'{problem.field}: {problem.message}')}"


class AnnotationsReporter(Reporter):
    order = CI

    def __init__(self, stream: TextIO, problems_stream: TextIO) -> None:
        self._stream = stream
        self._problems_stream = problems_stream

    def finish(self, report: SuiteReport) -> None:
        for command in workflow_commands(report):
            print(command, file=self._stream)
        self._stream.flush()

    def refused(self, problems: list[Problem]) -> None:
        for problem in problems[:MAX_PROBLEM_ANNOTATIONS]:
            print(problem_command(problem), file=self._problems_stream)
        self._problems_stream.flush()


class _Spec:
    name = "github"
    options = (ANNOTATIONS,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        if not output.github:
            return []
        # Workflow commands are read from stdout and stderr alike; stderr keeps a JSON or
        # JUnit document on stdout clean.
        stream = output.out() if output.stdout_format == "table" else output.err()
        return [AnnotationsReporter(stream, output.err())]


REPORTER = _Spec()
