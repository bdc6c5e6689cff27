"""The pass-rate trend the Markdown summary shows with `--history-dir`: the suite's last runs
by this agent, this run last and once, drawn as a Mermaid `xychart-beta` chart, and the
cases whose verdict flipped since the previous run.

Not a reporter (reporters import no other reporter): the Markdown reporter renders the
sections, this module reads the history and draws the chart. The chart holds numbers and
labels this module makes, each passed through a whitelist of characters (`label`), and
never a case id or anything else read from the run or the history: no text can close the
code fence, end a quoted label or start a Mermaid directive or comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from harness.tracking import history as history_store
from harness.tracking.history import HistoryEntry
from harness.tracking.history_reader import History

if TYPE_CHECKING:
    from harness.verdict.reports import SuiteReport

MAX_RUNS = 20  # points the chart shows: the latest runs, this one included
LABEL_LIMIT = 40
# Letters, digits, space and `,.:/_-`: no quote, bracket, backtick, `%` (a Mermaid
# comment), `;` (a statement break), `#` (an entity code) or line break.
_NOT_LABEL = re.compile(r"[^A-Za-z0-9 ,.:/_-]")


class Run(NamedTuple):
    """One run of the trend."""

    recorded_at: str  # as the history holds it: untrusted
    rate: float  # 0 to 1
    passed: int
    cases: int
    verdicts: dict[str, str]  # case id → passed | failed | error | not_run
    now: bool = False  # this run
    commit: str = ""  # the git commit it ran at, abbreviated to 12 digits; "" unknown
    # case id → its rubrics' judge setups and gates (`CaseReport.judge_keys`), where known
    judges: Mapping[str, Mapping[str, str]] = MappingProxyType({})


class Flip(NamedTuple):
    case: str
    was: str
    now: str
    # The case's judge changed between the two runs (a rubric's setup or its gate): the
    # flip is the judge's, never read as the agent's regression.
    judge_changed: bool = False

    @property
    def regression(self) -> bool:
        return self.was == "passed" and not self.judge_changed

    @property
    def change(self) -> str:
        if self.judge_changed:
            return "judge changed"
        if self.regression:
            return "regression"
        return "fixed" if self.now == "passed" else "changed"


def _run(entry: HistoryEntry, now: bool = False) -> Run:
    rate = entry.pass_rate  # from 0 to 1: the reader passes over an entry where it is not
    verdicts = {c.id: c.verdict for c in entry.cases}
    commit = (entry.receipt.git_commit or "")[:12] if entry.receipt is not None else ""
    totals = entry.totals
    judges = {c.id: c.judge for c in entry.cases if c.judge is not msgspec.UNSET}
    return Run(entry.recorded_at, rate, totals.passed, totals.cases, verdicts, now, commit, judges)


def runs(report: SuiteReport, history: History | Path, limit: int = MAX_RUNS) -> list[Run]:
    """The runs of `report`'s suite by its agent in the history (a run's view of it, or a
    directory), oldest first, at most `limit`, this run last (from `report`, whether its
    entry is written yet or not). Only the newest `limit` entries are read: this run's own
    may be among them. A history that cannot be read leaves this run alone: history never
    gates."""
    view = history if isinstance(history, History) else History(history)
    current = history_store.entry_of(report)
    earlier = _before(current, view.newest(report.suite, report.agent, limit))
    return [*(_run(e) for e in earlier[-(limit - 1) :]), _run(current, now=True)]


def _before(current: HistoryEntry, entries: list[HistoryEntry]) -> list[HistoryEntry]:
    """`entries` without this run's own and those recorded after it. The summary file is
    rendered before the history entry is written, the step summary after it (CI reporters
    finish last): this run's entry is found as stored, everything but its time equal."""
    # As written and read back: a lone surrogate in a case id is stored as U+FFFD.
    stored = msgspec.json.decode(history_store.encode(current), type=HistoryEntry)
    timeless = msgspec.structs.replace(stored, recorded_at="")
    found = [e for e in entries if msgspec.structs.replace(e, recorded_at="") == timeless]
    if not found:
        return entries
    mine = found[-1]
    return [e for e in entries if e is not mine and e.recorded_at <= mine.recorded_at]


def flips(trend: list[Run]) -> list[Flip]:
    """The cases of this run whose verdict differs from the previous run's, regressions
    (passed then, not now) first, each group by case id."""
    if len(trend) < 2:
        return []
    then, now = trend[-2].verdicts, trend[-1].verdicts
    judged_then, judged_now = trend[-2].judges, trend[-1].judges
    found = [
        Flip(case, then[case], v, judged_then.get(case) != judged_now.get(case))
        for case, v in now.items()
        if case in then and then[case] != v
    ]
    return sorted(found, key=lambda f: (not f.regression, f.case))


def when(run: Run) -> str | None:
    """`2025-05-14 04:17 UTC`, or None when the recorded time is no ISO 8601 time."""
    try:
        moment = datetime.fromisoformat(run.recorded_at)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def label(text: str) -> str:
    """`text` as a Mermaid label: whitelisted characters only, clipped; never empty."""
    return _NOT_LABEL.sub("", text)[:LABEL_LIMIT].strip() or "-"


def chart(trend: list[Run]) -> list[str]:
    """The trend as a fenced Mermaid `xychart-beta` block: the pass rate in percent per
    run, the x-axis the run's place (1 the oldest shown, `now` this run)."""
    names = ["now" if r.now else str(i) for i, r in enumerate(trend, 1)]
    axis = ", ".join(f'"{label(name)}"' for name in names)
    values = ", ".join(f"{r.rate * 100:.1f}" for r in trend)
    title = label(f"Pass rate in percent, last {len(trend)} run{'s' if len(trend) > 1 else ''}")
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "{title}"',
        f"    x-axis [{axis}]",
        f'    y-axis "{label("pass rate, percent")}" 0 --> 100',
        f"    line [{values}]",
        "```",
    ]
