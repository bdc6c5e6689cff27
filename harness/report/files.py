"""Atomic report files: a reader sees the old file or the whole new one, never a half."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from harness.report.model import SuiteReport

HISTORY_SCHEMA = "zeroclaw-eval/history/v1"


class ReportWriteError(Exception):
    pass


def write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise ReportWriteError(f"{path}: cannot write report: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ReportWriteError(f"{path}: cannot write report: {exc.strerror or exc}") from None


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
