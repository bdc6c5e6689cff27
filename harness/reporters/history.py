"""Run history: one JSON line per run (time, pass rate, per-case verdicts) appended to
`--history PATH`, with the trend against the previous line."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import msgspec

from harness.io import tail_lines
from harness.io.atomic import ReportFiles, ReportWriteError
from harness.io.files import file_kind, why
from harness.io.text import json_safe
from harness.reporters.base import COMMIT, Output, Reporter, say, skipped_as_partial
from harness.reporters.flags import GATED
from harness.reporters.flags import HISTORY as OPTION

if TYPE_CHECKING:
    from harness.verdict.reports import SuiteReport

# Not the original harness's `zeroclaw-eval/history/v1`, a different document.
HISTORY_SCHEMA = "zeroclaw-eval/pass-rate-line/v1"


def append_history(
    path: Path, report: SuiteReport, shown: str | None = None, stderr: TextIO | None = None
) -> str:
    """Append one JSON line (time, pass rate, per-case verdicts) and describe the trend,
    naming the file as `shown` (default: `path`). The previous pass rate is read from the
    file's end, never the whole file; a damaged line is said on `stderr` and passed over."""
    shown = str(path) if shown is None else shown
    t = report.totals
    rate = t.passed / t.cases if t.cases else 0.0
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
    cannot = f"{shown}: cannot append history"
    fd = _open(path, cannot)
    try:
        size = os.fstat(fd).st_size
        previous = _last_pass_rate(fd, size, shown, stderr)
        if not tail_lines.ends_with_newline(fd, size):
            line = "\n" + line  # a line cut short must not swallow this entry
        _write_all(fd, line.encode("utf-8"))  # one line: readers never see half an entry
    except OSError as exc:
        raise ReportWriteError(f"{cannot}: {why(exc)}") from None
    finally:
        os.close(fd)
    trend = f" (previous {previous * 100:.1f}%)" if previous is not None else " (first entry)"
    return f"pass rate {rate * 100:.1f}%{trend} appended to {shown}"


# O_NOFOLLOW: the path was checked before the run, but a link swapped in since must not
# aim the line at another file; O_NONBLOCK: nor may a FIFO hold the run.
_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open(path: Path, cannot: str) -> int:
    """The history file, opened to read its end and append: a regular file, or refused."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, _FLAGS, 0o666)
    except OSError as exc:
        raise ReportWriteError(f"{cannot}: {_refusal(path, exc)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ReportWriteError(f"{cannot}: not a regular file ({file_kind(mode)})")
    return fd


def _refusal(path: Path, exc: OSError) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return why(exc)
    if stat.S_ISLNK(mode):
        return "it is a symbolic link, and history is never appended through one"
    if not stat.S_ISREG(mode):
        return f"not a regular file ({file_kind(mode)})"
    return why(exc)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


class _Rate(msgspec.Struct):
    """What this reader needs of a line: its pass rate (any line with one will do)."""

    pass_rate: float


def _last_pass_rate(fd: int, size: int, shown: str, stderr: TextIO | None) -> float | None:
    """The pass rate of the file's last readable line; each damaged line after it is said
    on `stderr`, with its number."""
    numbers = tail_lines.LineNumbers(fd)
    damaged = 0
    for line in tail_lines.newest_first(fd, size):
        if line.data is not None and not line.data.strip():
            continue
        rate = _rate(line.data)
        if isinstance(rate, float):
            return rate
        damaged += 1
        if stderr is not None:
            said = f"{shown}, line {numbers.at(line.offset)}: history line skipped: {rate}"
            say(stderr, said)
        if damaged == tail_lines.MAX_DAMAGED:
            break
    return None


def _rate(data: bytes | None) -> float | str:
    """A line's pass rate, or what is wrong with it."""
    if data is None:
        return f"longer than {tail_lines.LINE_LIMIT} bytes"
    try:
        data.decode("utf-8")  # the fields this reader skips are text too
        rate = msgspec.json.decode(data, type=_Rate).pass_rate
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {exc.start})"
    except RecursionError:
        return "nested too deeply"
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        return str(exc)
    return rate if 0.0 <= rate <= 1.0 else f"{rate!r:.20} is not between 0 and 1"


class HistoryReporter(Reporter):
    # Appended once the run's report files are in place: a line for a run whose reports
    # could not all be written is still the run's pass rate, but never ahead of them.
    order = COMMIT + 1
    whole_cases = False  # each case's verdict alone

    def __init__(self, path: Path, stderr: TextIO, files: ReportFiles) -> None:
        self._files = files
        # Checked now, before the run; a device has no previous entry to compare with.
        self._path = files.plan(path, "append history", devices=False)
        self._stderr = stderr

    def finish(self, report: SuiteReport) -> None:
        if skipped_as_partial(report, self._stderr):
            return
        shown = self._files.shown(self._path)
        said = append_history(self._path, report, shown, self._stderr)
        self._files.written.append(self._path)
        say(self._stderr, said)


class _Spec:
    name, options, stdout_format = GATED["history"][:3]  # its gate's: said once

    def build(self, output: Output) -> list[Reporter]:
        path = output.values.get(OPTION.dest)
        if path is None:
            return []
        return [HistoryReporter(Path(path), output.err(), output.files)]


REPORTER = _Spec()
