"""The Markdown summary: totals, failing cases with their checks, collapsed details.
Written to `--summary PATH`, and appended to `$GITHUB_STEP_SUMMARY` on GitHub Actions."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.options import Option
from harness.reporters.atomic import write_atomic
from harness.reporters.base import CI, FILES, Output, Rendered, Reporter

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

OPTION = Option("--summary", "also write the Markdown summary here", metavar="PATH", type=Path)


def _cell(text: str, limit: int = 300) -> str:
    """Text safe inside a Markdown table cell rendered by GitHub (HTML-escaped, no pipes)."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return html.escape(text).replace("|", "\\|")


def _fence(body: str) -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def render_markdown(report: SuiteReport) -> str:
    t = report.totals
    code = int(report.exit_code())
    verdict = "passed" if code == 0 else "failed"
    icon = "✅" if verdict == "passed" else "❌"
    lines = [
        f"## {icon} zeroclaw-eval: {report.kind} suite <code>{_cell(report.suite)}</code> "
        f"{verdict} (exit {code})",
        "",
        "| cases | passed | failed checks | run errors | pass rate | agent | mode |",
        "|---:|---:|---:|---:|---:|---|---|",
        f"| {t.cases} | {t.passed} | {t.failed} | {t.errors} | "
        f"{(t.passed / t.cases * 100 if t.cases else 0):.1f}% | {_cell(report.agent)} | "
        f"{report.mode} |",
        "",
    ]
    if report.kind == "capability" and t.failed:
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
        # <code>, not backticks: entities from _cell are decoded in HTML, not in code spans.
        lines.append(
            f"| <code>{_cell(case.id)}</code> | <code>{_cell(where)}</code> | "
            f"{_cell(case.first_failure())} |"
        )
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
            f"<summary><code>{html.escape(case.id)}</code> — {label}</summary>",
            "",
            _fence(body),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines)


def _markdown_bytes(report: SuiteReport) -> bytes:
    return render_markdown(report).encode("utf-8")


class SummaryFile(Reporter):
    order = FILES + 2

    def __init__(self, path: Path, render: Rendered) -> None:
        self._path = path
        self._render = render

    def finish(self, report: SuiteReport) -> None:
        write_atomic(self._path, self._render(report))


class StepSummary(Reporter):
    """Appends the summary to the job's step summary; a failure to is said, not fatal."""

    order = CI + 1

    def __init__(self, path: str, render: Rendered, stderr: TextIO) -> None:
        self._path = path
        self._render = render
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        try:
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(self._render(report).decode("utf-8") + "\n")
        except OSError as exc:
            print(f"zeroclaw eval: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=self._stderr)


class _Spec:
    name = "markdown"
    options = (OPTION,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        once = Rendered(_markdown_bytes)
        reporters: list[Reporter] = []
        path = output.values.get(OPTION.dest)
        if path is not None:
            reporters.append(SummaryFile(Path(path), once))
        step_summary = output.environ.get("GITHUB_STEP_SUMMARY")
        if output.github and step_summary:
            reporters.append(StepSummary(step_summary, once, output.err()))
        return reporters


REPORTER = _Spec()
