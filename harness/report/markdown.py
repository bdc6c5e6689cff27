"""The Markdown summary: totals, failing cases with their checks, collapsed details."""

from __future__ import annotations

import html
import re

from harness.report.github import first_failure, worst_first
from harness.report.model import SuiteReport


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
    verdict = "passed" if report.exit_code() == 0 else "failed"
    icon = "✅" if verdict == "passed" else "❌"
    lines = [
        f"## {icon} zeroclaw-eval: {report.kind} suite <code>{_cell(report.suite)}</code> "
        f"{verdict} (exit {report.exit_code()})",
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
    failing = worst_first(report)
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
            f"{_cell(first_failure(case))} |"
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
