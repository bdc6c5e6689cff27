"""Run history: one transcript-free entry per run, each its own file under a history
directory (`--history-dir`), read back as a trend.

An entry holds the suite's totals and statistics, the run's receipt, and per case its
verdict, fixture hash and key figures: never fixture text, needles or model output, which
may be private (a check is named by its fixture path, `$.expects.response_contains[0]`,
not by what it looks for). Files are written whole under a name no other run can take,
so several CI jobs may write into one directory at once, and through no symbolic link
under the directory. The earlier one-line-per-run `history.jsonl` (`--history`) is read
too, as entries with verdicts only: move it into the history directory and its runs join
the trend.

Read back by `harness.tracking.history_reader`, newest first, as far as a run shows.

The original harness names its per-run receipts `zeroclaw-eval/history/v1`, in a
different shape; this format has its own tag.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from harness.io.files import why
from harness.runtime import interrupts
from harness.verdict.receipts import SuiteReceipt
from harness.verdict.reports import CaseReport, SuiteReport, SuiteStatistics, Totals

SCHEMA = "zeroclaw-eval/run-history/v1"
# The tags `history.jsonl` lines (`--history`) were written under, old and new.
LEGACY_SCHEMAS = ("zeroclaw-eval/history/v1", "zeroclaw-eval/pass-rate-line/v1")
# An entry file a reader takes; larger ones are skipped (a history entry is small).
MAX_ENTRY_BYTES = 16 << 20


class CaseEntry(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    fixture: str
    fixture_sha256: str | None = None
    verdict: str  # passed | failed | error | not_run
    flaky: bool = False
    passes: int | None = None  # repeated cases: passing runs of `runs`
    runs: int | None = None
    checks: dict[str, bool] = {}  # the check's fixture path → passed
    failed_categories: list[str] = []
    tokens: int = 0
    model_calls: int = 0
    duration_ms: float = 0.0
    # Each rubric's judge setup and gate (`CaseReport.judge_keys`); left out (UNSET) when
    # the case has no judge grade.
    judge: dict[str, str] | msgspec.UnsetType = msgspec.UNSET


class HistoryEntry(msgspec.Struct, kw_only=True, frozen=True):
    schema: str = SCHEMA
    recorded_at: str  # ISO 8601, UTC, seconds
    suite: str
    kind: str
    mode: str
    agent: str
    exit_code: int
    totals: Totals
    pass_rate: float
    statistics: SuiteStatistics | None = None
    receipt: SuiteReceipt | None = None
    cases: list[CaseEntry] = []

    @property
    def legacy(self) -> bool:
        """Read from a `history.jsonl` line: totals and verdicts only."""
        return self.receipt is None


def verdict_of(case: CaseReport) -> str:
    if case.not_run is not None:
        return "not_run"
    if case.error is not None:
        return "error"
    return "passed" if case.passed else "failed"


def case_entry(case: CaseReport) -> CaseEntry:
    return CaseEntry(
        id=case.id,
        fixture=case.fixture,
        fixture_sha256=case.fixture_sha256,
        verdict=verdict_of(case),
        flaky=case.flaky,
        passes=case.repeat.passes if case.repeat is not None else None,
        runs=case.repeat.requested if case.repeat is not None else None,
        checks={g.field: g.passed for g in case.grades},
        failed_categories=case.failed_categories,
        tokens=case.tokens,
        model_calls=case.model_calls,
        duration_ms=case.duration_ms,
        judge=msgspec.UNSET if case.judge_keys is None else case.judge_keys,
    )


def entry_of(report: SuiteReport, now: datetime | None = None) -> HistoryEntry:
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    totals = report.totals
    return HistoryEntry(
        recorded_at=moment.isoformat(timespec="seconds"),
        suite=report.suite,
        kind=report.kind,
        mode=report.mode,
        agent=report.agent,
        exit_code=int(report.exit_code()),
        totals=totals,
        pass_rate=round(totals.passed / totals.cases, 4) if totals.cases else 0.0,
        statistics=report.statistics,
        receipt=report.receipt,
        cases=[case_entry(c) for c in report.cases],
    )


def slug(text: str) -> str:
    """A file-name-safe spelling of a suite or agent name."""
    made = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return made[:80] or "suite"


# What `entry_name` makes; other files in a suite's folder are no entries.
NAME = re.compile(
    r"\d{8}T\d{6}Z-(?:[0-9a-f]{1,12}|nogit)-(?P<agent>[A-Za-z0-9._-]+)-[0-9a-f]{8}\.json"
)


def agent_of(name: str) -> str | None:
    """The agent an entry's name spells (its slug)."""
    match = NAME.fullmatch(name)
    return None if match is None else match["agent"]


def entry_name(entry: HistoryEntry) -> str:
    """`<YYYYMMDDTHHMMSSZ>-<commit|nogit>-<agent>-<random>.json`: sorted by time, and no
    two runs, even at the same second on the same commit, take the same name."""
    stamp = datetime.fromisoformat(entry.recorded_at).strftime("%Y%m%dT%H%M%SZ")
    commit = (entry.receipt.git_commit or "") if entry.receipt is not None else ""
    commit = re.sub("[^0-9a-f]", "", commit.lower())[:12]
    return f"{stamp}-{commit or 'nogit'}-{slug(entry.agent)}-{secrets.token_hex(4)}.json"


def encode(entry: HistoryEntry) -> bytes:
    from harness.io.text import json_safe, without_surrogates

    raw = msgspec.json.encode(without_surrogates(msgspec.to_builtins(entry)))
    return json_safe(msgspec.json.format(raw, indent=2).decode("utf-8")).encode("utf-8") + b"\n"


def suite_directory(directory: Path, suite: str) -> Path:
    return directory / slug(suite)


# --- writing --------------------------------------------------------------------------------

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
LINKED = "it is a symbolic link, and history is never written through one (remove it)"


class WriteError(Exception):
    """The entry could not be written: `where` (a path under the history directory, "" the
    directory itself) and why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where or '.'}: {reason}")
        self.where = where
        self.reason = reason


def write(directory: Path, entry: HistoryEntry) -> Path:
    """Write `entry` as a new file in its suite's folder under `directory`, whole: staged
    beside it and linked into place under a name no other run can take. The directory and
    the folder are opened without following a link (a link swapped in during the run, or
    checked in, would aim the entry anywhere the job can write): `WriteError` instead."""
    data = encode(entry)
    folder = slug(entry.suite)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a link or a file where the directory should be: said as it is opened
    except OSError as exc:
        raise WriteError("", why(exc)) from None
    root = _open_folder(str(directory), None, "")
    try:
        with contextlib.suppress(FileExistsError):
            _within(folder, os.mkdir, folder, dir_fd=root)
        fd = _open_folder(folder, root, folder)
    finally:
        os.close(root)
    try:
        while True:
            name = entry_name(entry)
            with interrupts.held():  # no staged file is ever left behind
                try:
                    _within(folder, _publish, fd, name, data)
                except FileExistsError:
                    continue
            return directory / folder / name
    finally:
        os.close(fd)


def _within(where: str, action: Callable[..., None], *args: Any, **options: Any) -> None:
    """`action(*args, **options)`, its OSError a `WriteError` at `where` (FileExistsError
    left for the caller: a name another run took)."""
    try:
        action(*args, **options)
    except FileExistsError:
        raise
    except OSError as exc:
        raise WriteError(where, why(exc)) from None


def _open_folder(name: str, dir_fd: int | None, where: str) -> int:
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        reason = why(exc)
        with contextlib.suppress(OSError):
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
            if stat.S_ISLNK(mode):
                reason = LINKED
            elif not stat.S_ISDIR(mode):
                reason = "it is not a directory"
        raise WriteError(where, reason) from None


def _publish(folder: int, name: str, data: bytes) -> None:
    staged = f".{name}.partial"
    handle = _new(folder, staged)  # exclusive: never another run's file
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(staged, name, src_dir_fd=folder, dst_dir_fd=folder)  # never replaces
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: created new, written in place
            with _new(folder, name) as target:
                target.write(data)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged, dir_fd=folder)


def _new(folder: int, name: str) -> BinaryIO:
    """A file created in `folder` under `name`, which must not exist, not even as a link."""
    return open(os.open(name, _NEW_FILE_FLAGS, 0o666, dir_fd=folder), "wb")
