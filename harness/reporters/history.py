"""Run history: one JSON line per run (time, pass rate, per-case verdicts) appended to
`--history PATH`, with the trend against the previous line."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.inputs import InputError, read_tail
from harness.options import Option
from harness.reporters.atomic import ReportFiles, ReportWriteError
from harness.reporters.base import COMMIT, Output, Reporter
from harness.reporters.text import clean, inert, json_safe, skipped_as_partial

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

# Not the original harness's `zeroclaw-eval/history/v1`, a different document.
HISTORY_SCHEMA = "zeroclaw-eval/pass-rate-line/v1"
OPTION = Option(
    "--history",
    "append this run's pass rate and per-case verdicts to a JSON-lines file",
    metavar="PATH",
    type=Path,
)


def append_history(path: Path, report: SuiteReport, shown: str | None = None) -> str:
    """Append one JSON line (time, pass rate, per-case verdicts) and describe the trend,
    naming the file as `shown` (default: `path`)."""
    shown = str(path) if shown is None else shown
    t = report.totals
    rate = t.passed / t.cases if t.cases else 0.0
    previous = _last_pass_rate(path, shown)
    entry = {
        "schema": HISTORY_SCHEMA,
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "suite": report.suite,
        "kind": report.kind,
        "agent": report.agent,
        "mode": report.mode,
        "cases": t.cases,
        "passed": t.passed,
        "failed": t.failed,
        "errors": t.errors,
        "pass_rate": round(rate, 4),
        "verdicts": {
            c.id: "error" if c.error is not None else ("passed" if c.passed else "failed")
            for c in report.cases
        },
    }
    # json_safe: a lone surrogate in a case id cannot be written as UTF-8 (U+FFFD instead),
    # and nothing in the line is left for a terminal or a runner to act on.
    line = json_safe(json.dumps(entry, ensure_ascii=False, sort_keys=True)) + "\n"
    if _ends_unterminated(path):
        line = "\n" + line  # a line cut short must not swallow this entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)  # one write of one line: readers never see half an entry
    except OSError as exc:
        raise ReportWriteError(f"{shown}: cannot append history: {exc.strerror or exc}") from None
    trend = f" (previous {previous * 100:.1f}%)" if previous is not None else " (first entry)"
    return f"pass rate {rate * 100:.1f}%{trend} appended to {shown}"


def _ends_unterminated(path: Path) -> bool:
    """True when `path` is a non-empty file whose last line has no newline."""
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


# The previous entry is the file's last line, however long the file has grown; a line holds
# one verdict per case, so this tail holds the last entry of a suite of some 50,000 cases.
HISTORY_TAIL_BYTES = 4 << 20


def _last_pass_rate(path: Path, shown: str) -> float | None:
    try:
        tail = read_tail(path, HISTORY_TAIL_BYTES)
    except InputError as exc:
        if exc.special:  # a FIFO or a device: reading could block or never end
            raise ReportWriteError(f"{shown}: cannot append history: {exc.reason}") from None
        return None
    # Only "\n" ends an entry: JSON leaves U+2028 and other separators raw.
    lines = tail.decode("utf-8", errors="replace").split("\n")
    for raw in reversed(lines):
        try:
            value = json.loads(raw).get("pass_rate")
        except (ValueError, AttributeError):
            continue  # a damaged line is skipped, not fatal: history is informational
        if isinstance(value, (int, float)):
            return float(value)
    return None


class HistoryReporter(Reporter):
    # Appended once the run's report files are in place: a line for a run whose reports
    # could not all be written is still the run's pass rate, but never ahead of them.
    order = COMMIT + 1

    def __init__(self, path: Path, stderr: TextIO, files: ReportFiles) -> None:
        self._files = files
        # Checked now, before the run; a device has no previous entry to compare with.
        self._path = files.plan(path, "append history", devices=False)
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        if skipped_as_partial(report, self._stderr):
            return
        said = inert(clean(append_history(self._path, report, self._files.shown(self._path))))
        self._files.written.append(self._path)
        print(f"zeroclaw eval: {said}", file=self._stderr)


class _Spec:
    name = "history"
    options = (OPTION,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        path = output.values.get(OPTION.dest)
        if path is None:
            return []
        return [HistoryReporter(Path(path), output.err(), output.files)]


REPORTER = _Spec()
