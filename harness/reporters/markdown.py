"""The Markdown summary: totals, pass rate and interval, failing cases with their checks,
collapsed details (a snapshot change many cases share shown once), repeated cases with their
runs, cases not run, the `--baseline` comparison, snapshots no case uses, the `--history-dir`
trend as a Mermaid chart (`harness.tracking.trend`) with flipped cases; a refused suite's
refusal. Written to `--summary PATH`, and appended to `$GITHUB_STEP_SUMMARY` on GitHub Actions.

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

from harness.io.problems import Problem
from harness.io.text import brief, clean, clean_lines, inert, inert_markup, one_line
from harness.reporters.base import CI, FILES, Output, Rendered, Reporter
from harness.reporters.flags import GATED
from harness.reporters.flags import SUMMARY as OPTION
from harness.snapshots.groups import fold_all, unfolded

if TYPE_CHECKING:
    from harness.io.atomic import ReportFiles
    from harness.tracking.history_reader import History
    from harness.verdict.comparison import CaseComparison
    from harness.verdict.reports import CaseReport, RepeatStats, SuiteReport

CELL_LIMIT = 120  # characters a table cell shows; longer text is in the details
MAX_PROBLEM_ROWS = 50
MAX_NOT_RUN = 50  # cases listed as not run; the JSON and JUnit reports have them all
MAX_ROWS = 50  # rows of a baseline or flip table; the JSON report and history have them all
WHY_LIMIT = 300  # a baseline's reason can name two hashes, the provider and the tools
# Escaped: the source stays ASCII where a reader could mistake them for `-` and `x`.
DASH, TIMES = "\u2013", "\u00d7"  # en dash, multiplication sign


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
    # A repeated case that passed still carries its first failing run's grades: its
    # failed checks failed no case.
    checks = sum(g.fails for c in report.cases if not c.passed for g in c.grades)
    rate = t.passed / t.cases * 100 if t.cases else 0.0
    return [
        "| cases | passed | failed checks | run errors | not run | flaky | pass rate | agent "
        "| mode |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|",
        f"| {t.cases} | {t.passed} | {checks} | {t.errors} | {t.not_run} | {t.flaky} | "
        f"{rate:.1f}% | {_cell(report.agent)} | {_cell(report.mode)} |",
        "",
    ]


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def _rate(share: float, low: float | None, high: float | None) -> str:
    """`85% [64-95%]` (with an en dash), or the rate alone when there is no interval."""
    if low is None or high is None:
        return _percent(share)
    return f"{_percent(share)} [{low * 100:.0f}{DASH}{high * 100:.0f}%]"


def _statistics(report: SuiteReport) -> list[str]:
    """The suite's pass rate, with its interval and what it rests on, for a run with
    repeated or clustered cases (for any other, the totals say it all)."""
    if not any(c.repeat is not None or c.cluster is not None for c in report.cases):
        return []
    s = report.statistics
    if not s.cases:
        return ["**Suite pass rate** unavailable: no case completed.", ""]
    line = (
        f"**Suite pass rate** {_rate(s.pass_rate, s.low, s.high)} (a repeated case counts "
        f"with its share of passing runs): {_inline(clean(s.note))}"
    )
    if s.low is None:  # the note then says why, not what the rate rests on
        line += f" ({s.cases} case(s) completed, {s.units} independent unit(s))"
    if s.repeated:
        line += f"; {s.flaky} of {s.repeated} repeated case(s) flaky"
    return [line + ".", ""]


def _verdict(stats: RepeatStats) -> str:
    """`17/20 runs passed (needs ≥ 80%)`."""
    rule = "every run" if stats.min_pass_rate is None else f"≥ {stats.min_pass_rate * 100:g}%"
    return f"{stats.passes}/{stats.completed} runs passed (needs {rule})"


def _failure(case: CaseReport) -> str:
    """A failing case's first failure as a cell; a repeated case's says how its runs came
    out and which run failed first."""
    head, more = case.failure_parts()
    stats = case.repeat
    if stats is not None and case.error is None:
        first = next((r.run for r in stats.runs if not r.passed), None)
        head = f"{_verdict(stats)}; run {first}: {head}"
    return _inline(brief((head, more), CELL_LIMIT))


def _repeated(report: SuiteReport) -> list[str]:
    cases = [c for c in report.cases if c.repeat is not None]
    if not cases:
        return []
    lines = [
        "### Repeated cases",
        "",
        "| case | runs | pass rate [95% Wilson interval] | pass^k | flaky | flipped checks "
        "| note |",
        "|---|---:|---|---|---|---|---|",
    ]
    for case in cases:
        stats = case.repeat
        assert stats is not None
        lines.append(
            f"| <code>{_cell(case.id)}</code> | {_runs(stats)} | {_pass_rate(stats)} | "
            f"{_curve(stats)} | {'yes' if stats.flaky else 'no'} | {_flips(stats)} | "
            f"{_cell(stats.note or '')} |"
        )
    lines.append("")
    return lines


def _runs(stats: RepeatStats) -> str:
    runs = f"{stats.passes}/{stats.completed}"
    if stats.completed < stats.requested:
        runs += f" ({stats.requested - stats.completed} of {stats.requested} errored)"
    return runs


def _pass_rate(stats: RepeatStats) -> str:
    rate = _rate(stats.proportion, *stats.interval) if stats.completed else DASH
    if stats.min_pass_rate is not None:
        rate += f" (needs ≥ {stats.min_pass_rate * 100:g}%)"
    return rate


def _curve(stats: RepeatStats) -> str:
    at_1 = f"pass@1 {stats.pass_at_k[0]:.2f}" if stats.pass_at_k else "no run completed"
    if not stats.pass_hat_k:
        return f"{at_1}, pass^k not established (a run errored)"
    return f"{at_1}, pass^{len(stats.pass_hat_k)} {stats.pass_hat_k[-1]:.2f}"


def _flips(stats: RepeatStats) -> str:
    ranked = sorted(stats.flips.items(), key=lambda item: -item[1])
    return _cell(", ".join(f"{check} {TIMES}{count}" for check, count in ranked))


def _not_run(report: SuiteReport) -> list[str]:
    cases = [c for c in report.cases if c.not_run is not None]
    if not cases:
        return []
    reasons = sorted({c.not_run for c in cases if c.not_run is not None})
    lines = [
        "### Not run",
        "",
        f"{len(cases)} case(s) never started ({_cell('; '.join(reasons), 300)}); "
        "the gate fails on them:",
        "",
    ]
    lines += [f"* <code>{_cell(c.id)}</code> (<code>{_cell(c.fixture)}</code>)" for c in
              cases[:MAX_NOT_RUN]]  # fmt: skip
    if len(cases) > MAX_NOT_RUN:
        lines.append(f"* … and {len(cases) - MAX_NOT_RUN} more")
    lines.append("")
    return lines


def render_markdown(report: SuiteReport, history: History | Path | None = None) -> str:
    """The summary; with `history` (a history directory, or a run's view of it), its trend."""
    code = int(report.exit_code())
    verdict = "passed" if code == 0 else "failed"
    icon = "✅" if verdict == "passed" else "❌"
    lines = [
        f"## {icon} {_tag(report.agent)}: {_cell(report.kind)} suite "
        f"<code>{_cell(report.suite)}</code> {verdict} (exit {code})"
        + (" — PARTIAL" if report.partial is not None else ""),
        "",
        *(
            [
                f"**Partial run** (<code>{_cell(report.partial)}</code>): this gate is not "
                "the suite's; run the whole suite, or merge every shard, for that.",
                "",
            ]
            if report.partial is not None
            else []
        ),
        *_totals(report),
        *_statistics(report),
    ]
    if report.kind == "capability" and report.totals.failed:
        lines += [
            "Capability suites are tracked, not gated: failed checks do not fail the run.",
            "",
        ]
    # A case the run never started is listed on its own, not as a failure it never had.
    failing = [c for c in report.worst_first() if c.not_run is None]
    if not failing and not report.totals.not_run:
        lines += ["Every case passed.", ""]
    lines += _failing(failing) if failing else []
    lines += [*_judge(report), *_repeated(report), *_not_run(report), *_baseline(report)]
    unused = report.unused_snapshots  # said after a run of the whole suite
    lines += [] if unused is None else [_pre("\n".join(unused.lines())), ""]
    lines += [] if history is None else _trend(report, history)
    return "\n".join(lines)


def _judge(report: SuiteReport) -> list[str]:
    totals = report.judge_totals
    if totals is None:
        return []
    rows = [
        f"| {_cell(n)} | {passed}/{verdicts} | {status} | {_cell(why)} |"
        for n, verdicts, passed, status, why in report.judge_rubrics()
    ]
    head = ["### LLM judge", "", _cell(totals.said()), "", "| rubric | passed | grades | why |"]
    return [*head, "|---|---:|---|---|", *rows, ""]


def _failing(failing: list[CaseReport]) -> list[str]:
    lines = [
        "### Failing cases",
        "",
        "| case | fixture | first failure |",
        "|---|---|---|",
    ]
    for case in failing:
        where = f"{case.fixture}:{case.line}" if case.line else case.fixture
        failure = _failure(case)
        # <code>, not backticks: character references are decoded in HTML, not in code spans.
        lines.append(f"| <code>{_cell(case.id)}</code> | <code>{_cell(where)}</code> | {failure} |")
    lines.append("")
    folded = fold_all(failing)[1]  # a change many cases share: its diff shown once
    for case in failing:
        if case.error is not None:
            body = case.error
            label = "run error"
        else:
            body = unfolded("\n".join(case.failure_lines()), folded[case.id])
            label = f"{len(case.failing_grades)} failing check(s)"
            if case.repeat is not None:
                first = next((r.run for r in case.repeat.runs if not r.passed), None)
                label = f"run {first} of {case.repeat.requested}: {label}"
        lines += [
            "<details>",
            f"<summary><code>{_html(clean(case.id))}</code> — {label}</summary>",
            "",
            _pre(body),
            "",
            "</details>",
            "",
        ]
    return lines


# --- the baseline -------------------------------------------------------------------------


def _baseline(report: SuiteReport) -> list[str]:
    comparison = report.baseline
    if comparison is None:
        return []
    from harness.tracking.budget_gate import budget_lines
    from harness.verdict.comparison import STATUSES

    notes = [*comparison.notes, *budget_lines(comparison)]  # the token and cost gates' too
    regressions = [c for c in comparison.cases if c.status == "regression"]
    confirmed = [c for c in regressions if c.confirmed]
    counts = [str(comparison.counts.get(status, 0)) for status in STATUSES]
    if regressions:
        counts[STATUSES.index("regression")] += f" ({len(confirmed)} confirmed)"
    shown = f"<code>{_cell(comparison.baseline)}</code>" if comparison.baseline else "the baseline"
    lines = [
        "### Baseline",
        "",
        f"Compared case by case with {shown}; over repeated runs a drop is a confirmed "
        f"regression at p < {comparison.level:g} (one-sided Fisher exact test).",
        "",
        "| " + " | ".join(STATUSES) + " |",
        "|" + "---:|" * len(STATUSES),
        "| " + " | ".join(counts) + " |",
        "",
        *(f"* {_inline(clean(note))}" for note in notes),
        *([""] if notes else []),
        _gate(len(confirmed), report.fail_on_regression),
        "",
    ]
    unconfirmed = [c for c in regressions if not c.confirmed]
    unverifiable = [c for c in comparison.cases if c.status == "unverifiable"]
    lines += _compared("Confirmed regressions", confirmed, ("categories", "p-value"))
    lines += _compared("Unconfirmed drops", unconfirmed, ("p-value",))
    lines += _compared("Unverifiable", unverifiable, ())
    return lines


def _gate(confirmed: int, fail_on_regression: bool) -> str:
    if fail_on_regression and confirmed:
        return f"**`--fail-on-regression`: the gate fails** on {confirmed} confirmed regression(s)."
    if fail_on_regression:
        return "`--fail-on-regression`: no confirmed regression, the baseline fails nothing."
    said = f": {confirmed} confirmed regression(s) reported only" if confirmed else ""
    return f"Regressions are not gated (no `--fail-on-regression`){said}."


def _compared(title: str, cases: list[CaseComparison], columns: tuple[str, ...]) -> list[str]:
    """A table of `cases` with `columns` (of `categories`, `p-value`) and why."""
    if not cases:
        return []
    heading = ("case", *columns, "why")
    lines = [
        f"#### {title}",
        "",
        "| " + " | ".join(heading) + " |",
        "|" + "---|" * len(heading),
    ]
    for case in cases[:MAX_ROWS]:
        cells = {
            "categories": _cell(", ".join(case.categories) or "no grades"),
            "p-value": DASH if case.p_value is None else f"{case.p_value:.3g}",
        }
        shown = [f"<code>{_cell(case.id)}</code>", *(cells[c] for c in columns)]
        lines.append(f"| {' | '.join([*shown, _cell(case.why, WHY_LIMIT)])} |")
    if len(cases) > MAX_ROWS:
        lines += ["", f"… and {len(cases) - MAX_ROWS} more; the JSON report has them all."]
    lines.append("")
    return lines


# --- the trend ----------------------------------------------------------------------------

_VERDICTS = {"passed": "passed", "failed": "failed", "error": "run error", "not_run": "not run"}


def _trend(report: SuiteReport, history: History | Path) -> list[str]:
    from harness.tracking import trend as summary_trend

    trend = summary_trend.runs(report, history)
    first = summary_trend.when(trend[0]) if len(trend) > 1 else None
    since = f", the first recorded {first}" if first else ""
    lines = [
        "### Trend",
        "",
        f"Pass rate (cases passed of all cases) of the last {len(trend)} run(s) of this suite "
        f"by <code>{_cell(report.agent)}</code>{_inline(since)}; `now` is this run.",
        "",
        *summary_trend.chart(trend),
        "",
    ]
    if len(trend) < 2:
        return [*lines, "The first run in this history: nothing to compare with.", ""]
    previous = summary_trend.when(trend[-2])
    then = f"the previous run ({_inline(previous)})" if previous else "the previous run"
    flipped = summary_trend.flips(trend)
    if not flipped:
        return [*lines, f"No case changed its verdict since {then}.", ""]
    lines += [
        f"#### Cases that flipped since {then}",
        "",
        "| case | then | this run | change |",
        "|---|---|---|---|",
    ]
    for flip in flipped[:MAX_ROWS]:
        was, now = (_cell(_VERDICTS.get(v, v)) for v in (flip.was, flip.now))
        lines.append(f"| <code>{_cell(flip.case)}</code> | {was} | {now} | {flip.change} |")
    if len(flipped) > MAX_ROWS:
        lines += ["", f"… and {len(flipped) - MAX_ROWS} more."]
    lines.append("")
    return lines


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
    name, options, stdout_format = GATED["markdown"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        history = output.history()
        once = Rendered(lambda report: render_markdown(report, history).encode("utf-8"))
        reporters: list[Reporter] = []
        path = output.values.get(OPTION.dest)
        if path is not None:
            reporters.append(SummaryFile(Path(path), once, output.files))
        step_summary = output.environ.get("GITHUB_STEP_SUMMARY")
        if output.github and step_summary:
            reporters.append(StepSummary(step_summary, once, output.err(), dict(output.values)))
        for reporter in reporters:  # the trend (with a history) reads every case's entry
            reporter.whole_cases = history is not None
        return reporters


REPORTER = _Spec()
