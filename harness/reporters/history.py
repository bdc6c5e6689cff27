"""Run history: one JSON line per run (time, pass rate, per-case verdicts) appended to
`--history PATH`, with the trend against the previous line."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.options import Option
from harness.reporters.atomic import ReportWriteError
from harness.reporters.base import FILES, Output, Reporter

if TYPE_CHECKING:
    from harness.verdict import SuiteReport

HISTORY_SCHEMA = "zeroclaw-eval/history/v1"
OPTION = Option(
    "--history",
    "append this run's pass rate and per-case verdicts to a JSON-lines file",
    metavar="PATH",
    type=Path,
)


def append_history(path: Path, report: SuiteReport) -> str:
    """Append one JSON line (time, pass rate, per-case verdicts) and describe the trend."""
    t = report.totals
    rate = t.passed / t.cases if t.cases else 0.0
    previous = _last_pass_rate(path)
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
    line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
    if _ends_unterminated(path):
        line = "\n" + line  # a line cut short must not swallow this entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)  # one write of one line: readers never see half an entry
    except OSError as exc:
        raise ReportWriteError(f"{path}: cannot append history: {exc.strerror or exc}") from None
    trend = f" (previous {previous * 100:.1f}%)" if previous is not None else " (first entry)"
    return f"pass rate {rate * 100:.1f}%{trend} appended to {path}"


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


def _last_pass_rate(path: Path) -> float | None:
    try:
        # Only "\n" ends an entry: JSON leaves U+2028 and other separators raw.
        lines = path.read_text("utf-8", errors="replace").split("\n")
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            value = json.loads(raw).get("pass_rate")
        except (ValueError, AttributeError):
            continue  # a damaged line is skipped, not fatal: history is informational
        if isinstance(value, (int, float)):
            return float(value)
    return None


class HistoryReporter(Reporter):
    order = FILES + 3

    def __init__(self, path: Path, stderr: TextIO) -> None:
        self._path = path
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        print(f"zeroclaw eval: {append_history(self._path, report)}", file=self._stderr)


class _Spec:
    name = "history"
    options = (OPTION,)
    stdout_format = None

    def build(self, output: Output) -> list[Reporter]:
        path = output.values.get(OPTION.dest)
        return [] if path is None else [HistoryReporter(Path(path), output.err())]


REPORTER = _Spec()
