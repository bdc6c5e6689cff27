"""GitHub Actions workflow commands for failing cases, escaped so no text can forge one."""

from __future__ import annotations

from harness.case import Problem
from harness.report.model import CaseReport, SuiteReport

MAX_ANNOTATIONS = 10


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF encoded, so it stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def worst_first(report: SuiteReport) -> list[CaseReport]:
    """Failing cases, run errors first, then lowest score; ties keep suite order."""
    failing = [c for c in report.cases if not c.passed]
    return sorted(failing, key=lambda c: (c.error is None, c.score or 0.0))


def first_failure(case: CaseReport) -> str:
    if case.error is not None:
        return f"run error: {case.error}"
    failing = case.failing_grades
    if not failing:
        return "the case produced no grades"
    grade = failing[0]
    more = f" (+{len(failing) - 1} more failing check(s))" if len(failing) > 1 else ""
    return f"{grade.check}: {grade.detail}{more}"


def workflow_commands(report: SuiteReport, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """`::error` commands for the worst `limit` failing cases, and a notice for the rest."""
    ranked = worst_first(report)
    commands = []
    for case in ranked[:limit]:
        props = [f"file={escape_property(case.fixture)}"]
        if case.line is not None:
            props.append(f"line={case.line}")
        props.append(f"title={escape_property(f'zeroclaw-eval: {case.id}')}")
        message = first_failure(case)
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
    """An `::error` command for one admission problem, at its field's line when the fixture
    parses far enough to find it."""
    from harness.locate import line_of

    props = [f"file={escape_property(problem.file)}"]
    try:
        with open(problem.file, encoding="utf-8") as handle:
            text = handle.read(2 << 20)
        props.append(f"line={line_of(text, problem.field)}")
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        pass  # unreadable or not JSON: the file alone is still worth pointing at
    props.append(f"title={escape_property('zeroclaw-eval: fixture refused')}")
    return f"::error {','.join(props)}::{escape_data(f'{problem.field}: {problem.message}')}"
