"""The HTML report's checks (`harness.reporters.html`): each case's checks table, the
request snapshot changes said once, the token and cost gates' overruns, and the snapshots
no case uses.

One prompt change touching 200 cases is one diff on the page: each distinct change is shown
once, in its own section, with links to the cases it touches, and each of those cases' checks
link to it instead of repeating it. What that section needs is kept per change (its diff, as
the first case showed it, and the ids of the cases), taken from each case as it is rendered,
so it never holds the cases' reports. A diff reads as one: added and removed lines marked
(by their sign, and by colour), every line cleaned and escaped, as all untrusted text here.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.io.text import clean_lines
from harness.reporters.html_transcript import Shown, row, table
from harness.reporters.html_transcript import text as _t
from harness.snapshots.groups import change_key

if TYPE_CHECKING:
    from harness.expectations.base import Grade
    from harness.verdict.comparison import Overrun
    from harness.verdict.reports import CaseReport, SuiteReport

STYLE = """
pre.diff span{display:block}.d-add{background:#dafbe1}.d-del{background:#ffebe9}
.d-hunk{color:#8250df}.d-file{color:#57606a;font-weight:600}.change{border:1px solid #d0d7de;
border-radius:6px;margin:6px 0;padding:2px 12px}.overrun{color:#cf222e;font-weight:600}
.b-over{background:#bc4c00}
"""
MAX_LINKED = 500  # cases a change names; the JSON report and the case list have them all


def anchor(case_id: str) -> str:
    """A case's element id: the same for the same case id, whatever characters it holds."""
    return "case-" + hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class _Change:
    number: int
    diff: str  # as the first case that shows it showed it
    cases: list[str] = field(default_factory=list)


def _diff_html(diff: str) -> str:
    """A unified diff, each line marked by what it is."""
    spans = []
    for index, line in enumerate(diff.split("\n")):
        if index < 2 and line.startswith(("--- ", "+++ ")):
            css = "d-file"
        elif line.startswith("@@"):
            css = "d-hunk"
        elif line.startswith("+"):
            css = "d-add"
        elif line.startswith("-"):
            css = "d-del"
        else:
            css = "d-ctx"
        spans.append(f'<span class="{css}">{html.escape(clean_lines(line))}</span>')
    return '<pre class="diff">' + "".join(spans) + "</pre>"


def _lines(detail: str) -> str:
    """A check's detail with its own lines kept as lines (what it quotes of the run has its
    newlines escaped already), each cleaned and escaped."""
    return _DETAILS[detail]


def _detail(detail: str) -> str:
    return f'<span class="lines">{html.escape(clean_lines(detail))}</span>'


_DETAILS = Shown(_detail, 4096)


def _passed(check: str, detail: str, category: str, field: str) -> str:
    return row(
        "✓",
        f"<code>{_t(check)}</code>",
        _lines(detail),
        _t(category),
        f"<code>{_t(field)}</code>",
        css="pass",
    )


_PASSED = Shown(_passed, 4096)  # a passing check's row, by what it says


class Checks:
    """What a report's cases' checks show: each case's table as it is rendered, and after
    them the snapshot changes those tables link to; the overruns of the suite's gates."""

    def __init__(self, report: SuiteReport | None = None) -> None:
        """The checks of `report`'s cases; None: of a plain pass, rendered before the run's
        end (no overrun, no snapshot change)."""
        self._changes: dict[str, _Change] = {}
        self._overruns: dict[str | None, list[Overrun]] = {}
        self._unused = None if report is None else report.unused_snapshots
        comparison = None if report is None else report.baseline
        for overrun in [] if comparison is None else comparison.overruns:
            self._overruns.setdefault(overrun.case, []).append(overrun)

    def badge(self, case: CaseReport) -> str:
        """A badge for a case over its token or cost gate; "" for any other."""
        if case.id not in self._overruns:
            return ""
        return ' <span class="badge b-over">over budget</span>'

    def case(self, case: CaseReport) -> list[str]:
        """The case's overruns, then its checks (a snapshot change linked, not repeated)."""
        lines = [
            f'<p class="overrun">Over its gate, failing it: {_t(o.describe())}</p>'
            for o in self._overruns.get(case.id, [])
        ]
        if not case.grades:
            return lines
        rows = [
            _PASSED[g.check, g.detail, g.category, g.field]
            if g.passed  # no snapshot change to link (`change_key`): by what it says
            else row(
                "✗",
                f"<code>{_t(g.check)}</code>",
                self._observed(case.id, g),
                _t(g.category),
                f"<code>{_t(g.field)}</code>",
                css="fail",
            )
            for g in case.grades
        ]
        passed = sum(g.passed for g in case.grades)
        return [
            *lines,
            f"<h4>Checks: {passed} of {len(case.grades)} passed</h4>",
            table(("", "check", "observed", "category", "fixture field"), rows, ' class="grades"'),
        ]

    def _observed(self, case_id: str, grade: Grade) -> str:
        key = change_key(grade)
        if key is None:
            return _lines(grade.detail)
        head, _, diff = grade.detail.partition("\n")
        change = self._changes.get(key)
        if change is None:
            change = self._changes[key] = _Change(len(self._changes) + 1, diff)
        change.cases.append(case_id)
        return (
            f'<span class="lines">{html.escape(clean_lines(head))}</span><br>'
            f'<a class="change-link" href="#snapshot-change-{change.number}">snapshot change '
            f"{change.number}: its diff, shown once with every case it touches</a>"
        )

    def changes(self) -> list[str]:
        """The section of the snapshot changes the cases rendered so far link to."""
        if not self._changes:
            return []
        total = sum(len(change.cases) for change in self._changes.values())
        parts = [
            '<section id="snapshot-changes">',
            f"<h2>Request snapshot changes: {len(self._changes)} distinct, across {total} "
            "case(s)</h2>",
            '<p class="sub">what the agents show the model changed since the snapshots were '
            "taken; each change once, with the cases it touches (if it is meant, run with "
            "--update-snapshots and commit the snapshots)</p>",
        ]
        for change in self._changes.values():
            shown = change.cases[:MAX_LINKED]
            links = ", ".join(
                f'<a href="#{anchor(case_id)}"><code>{_t(case_id)}</code></a>' for case_id in shown
            )
            more = len(change.cases) - len(shown)
            links += f" and {more} more" if more else ""
            parts += [
                f'<div class="change" id="snapshot-change-{change.number}">',
                f"<h3>Change {change.number}: {len(change.cases)} case(s)</h3>",
                f'<p class="cases">{links}</p>',
                _diff_html(change.diff),
                "</div>",
            ]
        return [*parts, "</section>"]

    def suite(self) -> list[str]:
        """For the report's head: the suite's own overruns (its sum over the cases
        compared), how many cases overran, and the snapshots no case uses."""
        suite = self._overruns.get(None, [])
        cases = [c for c in self._overruns if c is not None]
        said = [f"Over its gate, failing it: {_t(o.describe())}" for o in suite]
        if cases:
            said.append(f"{len(cases)} case(s) over their token or cost gate, marked below")
        lines = [f'<p class="overrun" id="overruns">{"<br>".join(said)}</p>'] if said else []
        if self._unused is not None:
            text = html.escape(clean_lines("\n".join(self._unused.lines())))
            lines.append(f'<pre id="unused-snapshots">\n{text}</pre>')
        return lines
