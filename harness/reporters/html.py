"""The HTML report: `--html PATH` on `run`, and `zeroclaw eval report` over a JSON report.

One self-contained file for a person: the verdict, every case failing first with its
transcript (each model request and answer, each tool call with arguments, result and
duration, each check with what was observed, the run error with the divergence), and with
`--history-dir` the pass rate over the suite's runs by this agent and the cases that flipped.
A request snapshot change many cases share is shown once, the cases linking to it, and the
token and cost gates' overruns are marked (`harness.reporters.html_checks`).

Nothing loads from anywhere: styles are inline, the chart is inline SVG, and the
Content-Security-Policy allows no fetch and no script but the one filter script, by its
hash, so a `<script>` or an event handler in model text could not run even if escaping
failed. With scripts off the page is complete (every case, transcripts in `<details>`);
the script only adds the filter bar. Untrusted text is cleaned (`text.clean`) and escaped,
and no line of the file is a workflow command (`text.inert_markup`), should CI print it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from harness.errors import HarnessError
from harness.io.text import clean, clip, inert_markup, one_line, policy_for
from harness.reporters.base import FILES, Document, Output, Reporter, spool_directory
from harness.reporters.flags import GATED
from harness.reporters.flags import HTML as OPTION
from harness.reporters.html_checks import STYLE as _CHECKS_STYLE
from harness.reporters.html_checks import Checks, anchor
from harness.reporters.html_page import SCRIPT as _SCRIPT
from harness.reporters.html_page import STYLE as _STYLE
from harness.reporters.html_transcript import block as _block
from harness.reporters.html_transcript import record_html
from harness.reporters.html_transcript import row as _row
from harness.reporters.html_transcript import table as _table
from harness.reporters.html_transcript import text as _t
from harness.reporters.streamed import Streamed
from harness.snapshots.groups import change_key

if TYPE_CHECKING:
    from harness.io.atomic import Part, ReportFiles
    from harness.tracking.history_reader import History
    from harness.tracking.trend import Run
    from harness.verdict.reports import CaseReport, RepeatStats, SuiteReport

MAX_REPORT_BYTES = 256 << 20  # the largest JSON report `zeroclaw eval report` reads
MAX_POINTS = 60  # runs the trend shows, the latest ones
REPORT_SCHEMA_PREFIX = "zeroclaw-eval/report/"


_FILTERS = ("all", "failing", "passing", "flaky", "errors")
_BADGES = {"passed": "passed", "failed": "failed", "error": "run error", "not_run": "not run"}


def content_security_policy() -> str:
    return policy_for(_SCRIPT)


def render_html(report: SuiteReport, history: History | Path | None = None) -> bytes:
    """The report; with `history` (a history directory, or a run's view of it), its trend."""
    checks = Checks(report)  # each snapshot change said once, the cases linking to it
    failing = report.worst_first()
    cases = [_case(case, checks) for case in failing + [c for c in report.cases if c.passed]]
    return _page(report, history, len(failing), checks, cases)


def _page(
    report: SuiteReport,
    history: History | Path | None,
    failing: int,
    checks: Checks,
    cases: list[str],
) -> bytes:
    """The page around its cases' entries (rendered first: it names the changes they met)."""
    code = int(report.exit_code())
    verdict = "passed" if code == 0 else "failed"
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>zeroclaw-eval: {_t(report.suite)} {verdict}</title>",
        f"<style>{_STYLE}{_CHECKS_STYLE}</style></head><body>",
        *_header(report, verdict, code),
        *([] if history is None else _trend(history, report)),
        *_cases(failing, checks),
        *cases,
        "</ol></section>",
        f"<script>{_SCRIPT}</script>\n</body></html>\n",
    ]
    return inert_markup("\n".join(parts)).encode("utf-8", "replace")


def _header(report: SuiteReport, verdict: str, code: int) -> list[str]:
    t, stats = report.totals, report.statistics
    said = f"{t.passed} of {t.cases} case(s) passed, {t.failed} failed, {t.errors} run error(s)"
    said += f", {t.not_run} not run" if t.not_run else ""
    rate = f"{stats.pass_rate * 100:.1f}%"
    if stats.low is not None and stats.high is not None:
        rate += f" ({stats.low * 100:.1f} to {stats.high * 100:.1f}%: {_t(stats.note)})"
    else:  # a replay samples nothing; a live run may rest on too little
        rate += f" ({_t(stats.note)})"
    meta = [("agent", report.agent), ("mode", report.mode)]
    meta.append(("duration", f"{report.duration_ms / 1000:.2f} s"))
    receipt, policy = report.receipt, ""
    if receipt is not None:
        commit = (receipt.git_commit or "not in git")[:12]
        meta += [
            ("harness", receipt.harness_version),
            ("framework", f"{receipt.framework or 'own loop'} {receipt.framework_version or ''}"),
            ("provider", receipt.provider),
            ("python", receipt.python),
            ("commit", commit + (" (dirty)" if receipt.git_dirty else "")),
        ]
        policy = f'<p class="sub">{_t(receipt.policy.summary)}</p>'
    if report.partial is not None:
        policy += (
            f'<p class="sub" id="partial"><strong>PARTIAL run</strong> '
            f"({_t(report.partial)}): this gate is not the suite's</p>"
        )
    totals = (t.cases, t.passed, t.failed, t.errors, t.not_run, t.flaky)
    return [
        f'<header class="{verdict}">',
        f"<h1>zeroclaw-eval: {_t(report.kind)} suite <code>{_t(report.suite)}</code></h1>",
        f'<p id="verdict"><strong>{verdict.upper()}</strong> (exit {code}): {said}</p>{policy}',
        '</header><section id="summary">',
        _table(
            ("cases", "passed", "failed", "run errors", "not run", "flaky", "pass rate"),
            [_row(*(str(n) for n in totals), rate)],
        ),
        "<dl>" + "".join(f"<dt>{k}</dt><dd>{_t(v.strip())}</dd>" for k, v in meta) + "</dl>",
        *_judge(report),
        *Checks(report).suite(),
        "</section>",
    ]


def _judge(report: SuiteReport) -> list[str]:
    """The judge's totals and each rubric's gate with its calibration figures."""
    totals = report.judge_totals
    if totals is None:
        return []
    rows = [_row(_t(n), f"{p}/{v}", s, _t(w)) for n, v, p, s, w in report.judge_rubrics()]
    said = f'<h2 id="judge">LLM judge</h2><p class="sub">{_t(totals.said())}</p>'
    return [said, _table(("rubric", "passed", "grades", "why (calibration)"), rows)]


# --- cases --------------------------------------------------------------------------------


def _cases(failing: int, checks: Checks) -> list[str]:
    buttons = "".join(
        f'<button type="button" data-filter="{name}" aria-pressed="{str(name == "all").lower()}">'
        f"{name}</button>"
        for name in _FILTERS
    )
    return [
        *checks.changes(),
        f'<section id="case-list"><h2>Cases ({failing} failing, listed first)</h2>',
        f'<div id="filters" hidden>{buttons} <input id="filter-id" type="search" '
        'placeholder="case id contains…" aria-label="case id contains"> '
        '<span id="shown" class="sub"></span></div><ol id="cases">',
    ]


# Where the cases go in the page rendered without them (escaped text holds no `<`).
_SPOOLED = "<!--zeroclaw-spooled-cases-->"


def _entry(case: CaseReport, checks: Checks) -> bytes:
    """A case's entry as the page has it, a line of its own."""
    return (inert_markup(_case(case, checks)) + "\n").encode("utf-8", "replace")


class HtmlCases:
    """The page written as its cases are kept (`harness.reporters.streamed`): each plain
    pass spooled as it comes. The failing cases (listed first, worst first) and a pass
    whose checks link to a snapshot change are kept whole by the verdict: they are
    rendered at the end, in the page's order, so the changes are numbered as they are
    met there."""

    def __init__(self, directory: Path | None, history: History | None) -> None:
        from harness.io.atomic import Spool

        self._history = history
        self._passing = Spool(directory)
        self._now = Spool(directory)  # what is rendered at the end
        self._held: list[tuple[int, str]] = []  # where a held pass goes, and its id

    def named(self, suite: str, agent: str) -> None:
        pass  # a case's entry does not name them

    def add(self, case: CaseReport) -> None:
        if not case.passed:
            return
        if any(change_key(g) is not None for g in case.grades):
            self._held.append((self._passing.size, case.id))
            return
        self._passing.write(_entry(case, Checks()))

    def parts(self, report: SuiteReport) -> Sequence[Part]:
        if report.baseline is not None and report.baseline.overruns:
            return (self.whole(report),)  # each case's overruns: known only at the end
        checks, failing, now = Checks(report), report.worst_first(), self._now
        for case in failing:
            now.write(_entry(case, checks))
        pieces: list[Part] = [now.slices([(0, now.size)])]
        held = {case_id for _, case_id in self._held}
        found = {c.id: c for c in report.cases if c.id in held}
        start = 0
        for at, case_id in self._held:
            offset = now.size
            now.write(_entry(found[case_id], checks))
            pieces += [self._passing.slices([(start, at - start)])]
            pieces += [now.slices([(offset, now.size - offset)])]
            start = at
        pieces.append(self._passing.slices([(start, self._passing.size - start)]))
        page = _page(report, self._history, len(failing), checks, [_SPOOLED])
        head, tail = page.split(f"{_SPOOLED}\n".encode(), 1)
        return (head, *pieces, tail)

    def whole(self, report: SuiteReport) -> bytes:
        return render_html(report, self._history)

    def close(self) -> None:
        self._passing.close()
        self._now.close()


def _case(case: CaseReport, checks: Checks) -> str:
    verdict = _verdict_of()(case)
    where = f"{case.fixture}:{case.line}" if case.line else case.fixture
    flaky = ' <span class="badge b-flaky">flaky</span>' if case.flaky else ""
    why = "" if case.passed else _t(one_line(case.first_failure(), 160))
    body = [*_problem(case), *checks.case(case)]
    body += [] if case.repeat is None else _repeat(case.repeat)
    body += [] if case.record is None else record_html(case.record)
    return "\n".join(
        [
            f'<li class="case" id="{anchor(case.id)}" data-verdict="{verdict}" '
            f'data-flaky="{str(case.flaky).lower()}" data-id="{_t(case.id)}">'
            f"<details{'' if case.passed else ' open'}><summary>"
            f'<span class="badge b-{verdict}">{_BADGES[verdict]}</span>{flaky}{checks.badge(case)} '
            f'<code class="id">{_t(case.id)}</code> <span class="where">{_t(where)}</span> '
            f'<span class="ms">{case.duration_ms:.1f} ms</span> <span class="why">{why}</span>'
            '</summary><div class="body">',
            *body,
            "</div></details></li>",
        ]
    )


@functools.cache  # imported once, not at every case
def _verdict_of() -> Callable[[CaseReport], str]:
    from harness.tracking.history import verdict_of

    return verdict_of


def _problem(case: CaseReport) -> list[str]:
    lines = []
    if case.not_run is not None:
        lines.append(f'<p class="unanswered">Not run: {_t(case.not_run)}</p>')
    if case.error is not None:
        lines += ["<h4>Run error</h4>", _block(case.error, "error")]
    if case.error_frames:
        raised = "\n".join(clean(frame.shown()) for frame in case.error_frames)
        lines += ["<h4>Raised at (innermost last)</h4>", _block(raised)]
    if case.traceback:
        lines.append(f"<details><summary>traceback</summary>{_block(case.traceback)}</details>")
    return lines


def _repeat(stats: RepeatStats) -> list[str]:
    low, high = stats.interval
    said = (
        f"{stats.passes} of {stats.completed} completed run(s) passed ({stats.requested} asked for)"
    )
    if stats.completed:  # no rate rests on no run
        said += (
            f": {stats.proportion * 100:.1f}%, 95% Wilson interval {low * 100:.1f} to "
            f"{high * 100:.1f}% over {stats.completed} run(s)"
        )
    said += "" if stats.min_pass_rate is None else f"; bar {stats.min_pass_rate * 100:.0f}%"
    said += "; flaky" if stats.flaky else ""
    rows = [
        _row(
            str(r.run),
            "passed" if r.passed else "failed",
            _t(r.error or ", ".join(r.failed_checks)),
            str(r.tokens),
            str(r.model_calls),
            f"{r.duration_ms:.1f}",
            css="pass" if r.passed else "fail",
        )
        for r in stats.runs
    ]
    note = f'<p class="sub">{_t(stats.note)}</p>' if stats.note else ""
    head = ("run", "verdict", "error or failed checks", "tokens", "model calls", "ms")
    return [f"<h4>Repeated runs</h4><p>{_t(said)}</p>{note}", _table(head, rows)]


# --- trend --------------------------------------------------------------------------------


def _when(run: Run) -> str:
    return "this run" if run.now else clean(run.recorded_at)[:16].replace("T", " ")


def _trend(history: History | Path, report: SuiteReport) -> list[str]:
    from harness.tracking import (
        trend as summary_trend,  # the history's reader, only when there is one
    )

    points = summary_trend.runs(report, history, MAX_POINTS)
    rows = [
        _row(
            _t(_when(p)),
            f"<code>{_t(p.commit)}</code>",
            f"{p.passed} of {p.cases}",
            f"{p.rate * 100:.1f}%",
        )
        for p in reversed(points)
    ]
    return [
        f'<section id="trend"><h2>Pass rate over the last {len(points)} run(s)</h2>'
        '<p class="sub">cases passed of all cases, per run of this suite by this agent</p>',
        _chart(points),
        "<details><summary>the runs</summary>",
        _table(("recorded", "commit", "passed", "pass rate"), rows) + "</details>",
        *_flips(points),
        "</section>",
    ]


def _chart(points: list[Run]) -> str:
    width, height, left, right, top, bottom = 720, 200, 44, 30, 12, 30
    n = len(points)

    def x(i: int) -> float:
        return left + (width - left - right) * (i / (n - 1) if n > 1 else 0.5)

    def y(rate: float) -> float:
        return top + (height - top - bottom) * (1 - min(max(rate, 0.0), 1.0))

    grid = "".join(
        f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
        f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v * 100:.0f}%</text>'
        for v in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    line = " ".join(f"{x(i):.1f},{y(p.rate):.1f}" for i, p in enumerate(points))
    dots = "".join(
        f'<circle class="dot{" now" if p.now else ""}" cx="{x(i):.1f}" cy="{y(p.rate):.1f}" '
        f'r="{6 if p.now else 4}"><title>{_t(_when(p))} {_t(p.commit)}: {p.rate * 100:.1f}% '
        f"({p.passed} of {p.cases})</title></circle>"
        for i, p in enumerate(points)
    )
    # The first run's date and the last's, anchored inside the chart so neither is cut.
    ends = [(0, "start"), (n - 1, "end")] if n > 1 else [(0, "middle")]
    labels = "".join(
        f'<text x="{x(i):.1f}" y="{height - 8}" text-anchor="{a}">{_t(_when(points[i]))}</text>'
        for i, a in ends
    )
    return (
        f'<svg id="trend-chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}"><title>pass rate per run, this run '
        f'last: {points[-1].rate * 100:.1f}%</title>{grid}<polyline class="line" '
        f'points="{line}"/>{dots}{labels}</svg>'
    )


def _flips(points: list[Run]) -> list[str]:
    if len(points) < 2:
        return ['<p id="flips">The first run in this history: nothing to compare with.</p>']
    from harness.tracking.trend import flips

    flipped = flips(points)  # regressions first: what a reader looks for
    if not flipped:
        return [f'<p id="flips">No case changed its verdict since {_t(_when(points[-2]))}.</p>']
    rows = [
        _row(
            f"<code>{_t(f.case)}</code>",
            _t(f.was),
            _t(f.now),
            css="fail" if f.regression else "fixed",
        )
        for f in flipped
    ]
    return [
        f"<h3>Cases that flipped since {_t(_when(points[-2]))}</h3>",
        _table(("case", "then", "this run"), rows, ' id="flips"'),
    ]


# --- `zeroclaw eval report` ---------------------------------------------------------------


class ReportInputError(HarnessError):
    """What `zeroclaw eval report` was given cannot be read as a report or a history."""


@functools.cache
def _document_type() -> Any:
    """The JSON report read as a `SuiteReport` with its schema tag (what the report derives,
    totals, statistics, the exit code, is derived again). Built here, not taken from the
    JSON reporter: no reporter imports another."""
    from harness.verdict.reports import SuiteReport

    class ReportDocument(SuiteReport, kw_only=True, frozen=True):
        schema: str

    return ReportDocument


def load_report(path: Path) -> SuiteReport:
    """The `SuiteReport` a JSON report (`--json-report`) was written from."""
    import msgspec

    from harness.io.files import InputError, decode_json, read_bounded
    from harness.verdict.reports import SuiteReport

    try:
        document = decode_json(read_bounded(path, MAX_REPORT_BYTES), _document_type())
    except InputError as exc:
        raise ReportInputError(f"{path}: cannot read the JSON report: {exc.reason}") from None
    except msgspec.ValidationError as exc:
        raise ReportInputError(f"{path}: not a zeroclaw-eval JSON report: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ReportInputError(f"{path}: not a JSON report: {exc}") from None
    if not document.schema.startswith(REPORT_SCHEMA_PREFIX):
        schema = clip(document.schema, 80)
        raise ReportInputError(f"{path}: not a zeroclaw-eval JSON report (schema {schema!r})")
    for index, case in enumerate(document.cases):
        # The suite's interval is derived again from these shares, and refuses one no
        # runs can give; `not <=` holds for NaN too.
        share = case.repeat.proportion if case.repeat is not None else 0.0
        if not 0.0 <= share <= 1.0:
            raise ReportInputError(
                f"{path}: not a zeroclaw-eval JSON report: $.cases[{index}].repeat.proportion: "
                f"{share!r} is no pass proportion (0 to 1)"
            )
    return SuiteReport(**{name: getattr(document, name) for name in SuiteReport.__struct_fields__})


def write_from_json(
    report: Path | str,
    path: Path | str,
    history: Path | str | None,
    files: ReportFiles,
    stderr: TextIO | None = None,
) -> Path:
    """`zeroclaw eval report`: the HTML report of the JSON report `report`, at `path`; a
    damaged history entry is said on `stderr` and left out."""
    destination = files.plan(Path(path))  # checked before anything is read
    # `realpath` raises ValueError on a NUL, which no path holds: `load_report` says so.
    if "\0" not in os.fspath(report) and os.path.realpath(report) == os.path.realpath(destination):
        raise ReportInputError(f"{path}: is the JSON report itself; name another file")
    if history is not None and not Path(history).is_dir():
        raise ReportInputError(f"{history}: cannot read the history: not a directory")
    suite = load_report(Path(report))
    view = None
    if history is not None:
        from harness.tracking.history_reader import History

        view = History(Path(history), str(history), stderr)
    files.stage(destination, render_html(suite, view))
    files.commit()
    return destination


class _Spec:
    name, options, stdout_format = GATED["html"][:3]  # its gate's: said once
    # `zeroclaw eval report`, handed over through the registry as `run`'s reports are.
    write_from_json = staticmethod(write_from_json)

    def build(self, output: Output) -> list[Reporter]:
        path = output.values.get(OPTION.dest)
        if path is None:
            return []
        history = output.history()
        render = Streamed(HtmlCases(spool_directory(path), history))
        document = Document(render, path=Path(path), order=FILES + 3, files=output.files)
        document.wants_transcripts = True  # it shows every case's transcript
        # Its trend reads every case's history entry at the end.
        document.whole_cases = history is not None
        return [document]


REPORTER = _Spec()
