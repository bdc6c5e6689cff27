"""The Markdown summary: totals, failing cases with their checks, collapsed details; and,
when admission refuses the suite, the refusal. Written to `--summary PATH`, and appended to
`$GITHUB_STEP_SUMMARY` on GitHub Actions.

Untrusted text is cleaned (`text.clean`) and HTML-escaped; in a Markdown line (the heading,
a table cell) the characters that would make Markdown of it (a code span, a link or image,
a cell break) are escaped too, so GitHub shows it as the text it is. Details are `<pre>`
blocks, not code fences, so that character references can keep a line of them from being
a workflow command (`text.inert_markup`) while it shows unchanged.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.options import Option
from harness.problems import Problem
from harness.reporters.base import CI, FILES, Output, Rendered, Reporter
from harness.reporters.text import brief, clean, clean_lines, inert, inert_markup, one_line

if TYPE_CHECKING:
    from harness.reporters.atomic import ReportFiles
    from harness.verdict import SuiteReport

OPTION = Option("--summary", "also write the Markdown summary here", metavar="PATH", type=Path)

CELL_LIMIT = 120  # characters a table cell shows; longer text is in the details
MAX_PROBLEM_ROWS = 50


def _html(cleaned: str) -> str:
    """Clean text in raw HTML (`<summary>`, `<pre>`), where GitHub reads no Markdown."""
    return inert_markup(html.escape(cleaned))


def _inline(cleaned: str) -> str:
    """Clean text in a Markdown line: no code span (a backtick: references are not decoded
    inside one), no link or image (they need `](`), no cell break (a pipe)."""
    markup = html.escape(cleaned).replace("\\", "\\\\").replace("`", "\\`").replace("|", "\\|")
    if "](" in markup:
        markup = markup.replace("[", "\\[")
    return inert_markup(markup)


def _cell(text: str, limit: int = CELL_LIMIT) -> str:
    """Untrusted text as one table cell (or a heading's part): one line, clipped."""
    return _inline(one_line(text, limit))


def _pre(body: str) -> str:
    # The newline after <pre> is dropped by HTML, so the body shows from its first line.
    return f"<pre>\n{_html(clean_lines(body))}</pre>"


def _tag(agent: str | None) -> str:
    return f"zeroclaw-eval[{_cell(agent)}]" if agent else "zeroclaw-eval"


def _totals(report: SuiteReport) -> list[str]:
    t = report.totals
    checks = sum(not g.passed for case in report.cases for g in case.grades)
    rate = t.passed / t.cases * 100 if t.cases else 0.0
    return [
        "| cases | passed | failed checks | run errors | pass rate | agent | mode |",
        "|---:|---:|---:|---:|---:|---|---|",
        f"| {t.cases} | {t.passed} | {checks} | {t.errors} | {rate:.1f}% | "
        f"{_cell(report.agent)} | {_cell(report.mode)} |",
        "",
    ]


def render_markdown(report: SuiteReport) -> str:
    code = int(report.exit_code())
    verdict = "passed" if code == 0 else "failed"
    icon = "✅" if verdict == "passed" else "❌"
    lines = [
        f"## {icon} {_tag(report.agent)}: {_cell(report.kind)} suite "
        f"<code>{_cell(report.suite)}</code> {verdict} (exit {code})",
        "",
        *_totals(report),
    ]
    if report.kind == "capability" and report.totals.failed:
        lines += [
            "Capability suites are tracked, not gated: failed checks do not fail the run.",
            "",
        ]
    failing = report.worst_first()
    if not failing:
        lines.append("Every case passed.")
        return "\n".join(lines) + "\n"
    lines += [
        "### Failing cases",
        "",
        "| case | fixture | first failure |",
        "|---|---|---|",
    ]
    for case in failing:
        where = f"{case.fixture}:{case.line}" if case.line else case.fixture
        failure = _inline(brief(case.failure_parts(), CELL_LIMIT))
        # <code>, not backticks: character references are decoded in HTML, not in code spans.
        lines.append(f"| <code>{_cell(case.id)}</code> | <code>{_cell(where)}</code> | {failure} |")
    lines.append("")
    for case in failing:
        if case.error is not None:
            body = case.error
            label = "run error"
        else:
            body = "\n".join(case.failure_lines())
            label = f"{len(case.failing_grades)} failing check(s)"
        lines += [
            "<details>",
            f"<summary><code>{_html(clean(case.id))}</code> — {label}</summary>",
            "",
            _pre(body),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines)


def render_refusal(
    problems: Sequence[Problem], agent: str | None = None, suite: str | None = None
) -> str:
    """What admission refused, file by file: nothing was run."""
    files = len({p.file for p in problems})
    where = f" suite <code>{_cell(suite)}</code>" if suite else " suite"
    lines = [
        f"## ❌ {_tag(agent)}:{where} refused (exit 1)",
        "",
        f"Admission refused {len(problems)} problem(s) in {files} file(s); nothing was run.",
        "",
        "| file | line | field | problem |",
        "|---|---:|---|---|",
    ]
    for problem in problems[:MAX_PROBLEM_ROWS]:
        line = "" if problem.line is None else str(problem.line)
        lines.append(
            f"| <code>{_cell(problem.file)}</code> | {line} | <code>{_cell(problem.field)}</code> "
            f"| {_cell(problem.message, 300)} |"
        )
    if len(problems) > MAX_PROBLEM_ROWS:
        lines += ["", f"… and {len(problems) - MAX_PROBLEM_ROWS} more problem(s); see the log."]
    return "\n".join(lines) + "\n"


def _markdown_bytes(report: SuiteReport) -> bytes:
    return render_markdown(report).encode("utf-8")


class SummaryFile(Reporter):
    order = FILES + 2

    def __init__(self, path: Path, render: Rendered, files: ReportFiles) -> None:
        self._files = files
        self._path = files.plan(path)  # checked now, before the run
        self._render = render

    def finish(self, report: SuiteReport) -> None:
        self._files.stage(self._path, self._render(report))


class StepSummary(Reporter):
    """Appends the summary (or the refusal) to the job's step summary; a failure to is
    said, not fatal."""

    order = CI + 1

    def __init__(
        self, path: str, render: Rendered, stderr: TextIO, values: dict[str, Any] | None = None
    ) -> None:
        self._path = os.path.abspath(path)  # fixed now: an agent may change the directory
        self._render = render
        self._stderr = stderr
        self._values = values or {}

    def finish(self, report: SuiteReport) -> None:
        self._append(self._render(report).decode("utf-8"))

    def refused(self, problems: list[Problem]) -> None:
        agent, suite = self._values.get("agent"), self._values.get("suite")
        self._append(
            render_refusal(
                problems,
                agent if isinstance(agent, str) and agent else None,
                None if suite is None else str(suite),
            )
        )

    def _append(self, text: str) -> None:
        try:
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            why = inert(one_line(str(exc)))
            print(f"zeroclaw eval: cannot append to GITHUB_STEP_SUMMARY: {why}", file=self._stderr)


class _Spec:
    name = "markdown"
    options = (OPTION,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        once = Rendered(_markdown_bytes)
        reporters: list[Reporter] = []
        path = output.values.get(OPTION.dest)
        if path is not None:
            reporters.append(SummaryFile(Path(path), once, output.files))
        step_summary = output.environ.get("GITHUB_STEP_SUMMARY")
        if output.github and step_summary:
            reporters.append(StepSummary(step_summary, once, output.err(), dict(output.values)))
        return reporters


REPORTER = _Spec()
