"""Run history read back: the newest entries of a suite by an agent, as far as a run
shows them, each decoded strictly and checked, a damaged one said and passed over.

A run reads only what it shows: entry names sort by time (`history_store.entry_name`), so
the newest are found by listing the suite's folder and read newest first until there are
enough; an earlier `history.jsonl` moved into the directory is read from its end
(`harness.io.tail_lines`). One view serves every report of a run (`History.of_run`), so no
file is read twice. Every entry is hostile until decoded with its type (msgspec, its
nesting bounded by the interpreter's recursion limit) and checked (rates from 0 to 1,
counts in range, an ISO 8601 time); a damaged one is said once, naming its file (and
line), and passed over: history informs, it never gates.
"""

from __future__ import annotations

import os
import stat
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import msgspec

from harness.io import tail_lines
from harness.io.files import InputError, open_regular, read_bounded, why
from harness.io.text import clean, clip, inert
from harness.tracking import history as history_store
from harness.tracking.history import (
    LEGACY_SCHEMAS,
    NAME,
    SCHEMA,
    CaseEntry,
    HistoryEntry,
    agent_of,
    slug,
)
from harness.verdict.reports import Totals

MAX_COUNT = 10**9  # a count of cases no suite reaches: a larger one is damage

# --- decoding -------------------------------------------------------------------------------


class Damaged(Exception):
    """An entry or a line that is no history entry; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Line(msgspec.Struct, kw_only=True, frozen=True):
    """A line of the earlier `history.jsonl` (`--history`)."""

    schema: str
    timestamp: str
    suite: str
    kind: str
    mode: str = "replay"
    agent: str = ""
    cases: int
    passed: int
    failed: int
    errors: int
    pass_rate: float
    verdicts: dict[str, str] = {}


def _decoded(data: bytes, kind: type[msgspec.Struct]) -> msgspec.Struct:
    """`data` decoded as `kind`, strictly; msgspec raises RecursionError past the
    interpreter's recursion limit, where `json.loads` would take the nesting it can."""
    try:
        data.decode("utf-8")  # the fields msgspec skips unread are text too
        return msgspec.json.decode(data, type=kind)
    except UnicodeDecodeError as exc:
        raise Damaged(f"not UTF-8 (byte {exc.start})") from None
    except RecursionError:
        raise Damaged("nested too deeply") from None
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise Damaged(str(exc)) from None  # what is wrong, and where: `... - at $.cases`


def decode(data: bytes) -> HistoryEntry:
    """The entry a file holds, or `Damaged`."""
    entry = _decoded(data, HistoryEntry)
    assert isinstance(entry, HistoryEntry)
    if entry.schema != SCHEMA:
        raise Damaged(f"its schema is {_quoted(entry.schema)}, not {SCHEMA}")
    _check(entry)
    return entry


def decode_line(data: bytes | None) -> HistoryEntry:
    """The entry a line of the earlier `history.jsonl` holds (totals, no receipt), or
    `Damaged`; None is a line longer than a reader keeps."""
    if data is None:
        raise Damaged(f"longer than {tail_lines.LINE_LIMIT} bytes")
    line = _decoded(data, _Line)
    assert isinstance(line, _Line)
    if line.schema not in LEGACY_SCHEMAS:
        raise Damaged(f"its schema is {_quoted(line.schema)}, not a history line's")
    entry = HistoryEntry(
        recorded_at=line.timestamp,
        suite=line.suite,
        kind=line.kind,
        mode=line.mode,
        agent=line.agent,
        exit_code=-1,  # not recorded by the earlier format
        totals=Totals(line.cases, line.passed, line.failed, line.errors),
        pass_rate=line.pass_rate,
        cases=[CaseEntry(id=i, fixture="", verdict=v) for i, v in line.verdicts.items()],
    )
    _check(entry, totals="$.", time="$.timestamp")
    return entry


def _check(entry: HistoryEntry, totals: str = "$.totals.", time: str = "$.recorded_at") -> None:
    """What typing cannot say: the numbers a chart draws are in range, the time is one.
    `totals` and `time` are where the file holds them."""
    if not 0.0 <= entry.pass_rate <= 1.0:  # NaN too
        raise Damaged(f"{entry.pass_rate!r:.20} is not between 0 and 1 - at `$.pass_rate`")
    for name in entry.totals.__struct_fields__:
        if not 0 <= getattr(entry.totals, name) <= MAX_COUNT:
            raise Damaged(f"a count out of range - at `{totals}{name}`")
    try:
        if len(entry.recorded_at) > 64:
            raise ValueError
        datetime.fromisoformat(entry.recorded_at)
    except ValueError:
        raise Damaged(f"{_quoted(entry.recorded_at)} is no ISO 8601 time - at `{time}`") from None


def _quoted(text: str) -> str:
    return repr(clip(text, 60))


def _partial(entry: HistoryEntry) -> bool:
    """Part of the suite: never a point of its trend."""
    return entry.receipt is not None and entry.receipt.partial


# --- reading --------------------------------------------------------------------------------


class History:
    """A history directory as one run reads it: per suite (and agent) its newest entries,
    each file read at most once, each damaged entry said once on `stderr` (naming it as
    under `shown`, the directory as the command line gave it) and passed over."""

    def __init__(
        self, directory: Path, shown: str | None = None, stderr: TextIO | None = None
    ) -> None:
        self.directory = directory
        self._shown = str(directory) if shown is None else shown
        self._stderr = stderr
        self._said: set[str] = set()
        self._entries: dict[str, HistoryEntry | None] = {}  # file → its entry; None: damaged
        self._newest: dict[tuple[str, str | None], tuple[int | None, list[HistoryEntry]]] = {}

    @classmethod
    def of_run(
        cls, shared: dict[str, Any], stderr: TextIO | None, given: str | os.PathLike[str]
    ) -> History:
        """The view of the history directory `given` every reporter of a run shares (kept
        in the run's `shared`), made by the first to ask: the history is read once however
        many reports show it, and its warnings go to the run's `stderr`. Its path is fixed
        now: an agent may change the working directory during the run."""
        directory = Path(os.path.abspath(given))
        key = f"history:{directory}"
        view = shared.get(key)
        if not isinstance(view, History):
            view = cls(directory, str(given), stderr or sys.stderr)
            shared[key] = view
        return view

    def newest(self, suite: str, agent: str | None, count: int | None) -> list[HistoryEntry]:
        """The newest `count` (None: all) entries of `suite` by `agent` (None: any), oldest
        first: from the suite's folder, newest by name, and from the lines of each
        `*.jsonl` beside the folders, newest last; a partial run's entry never."""
        if count == 0:
            return []
        known = self._newest.get((suite, agent))
        if known is not None and _covers(known[0], count):
            return _last(known[1], count)
        found = self._from_folder(suite, agent, count)
        for name in self._line_files():
            found += self._from_lines(name, suite, agent, count)
        found = _last(sorted(found, key=lambda e: e.recorded_at), count)
        self._newest[(suite, agent)] = (count, found)
        return found

    def _say(self, where: str, what: str, reason: str) -> None:
        said = f"{where}: {what} skipped: {reason}"
        if self._stderr is not None and said not in self._said:
            self._said.add(said)
            print(f"zeroclaw eval: {inert(clean(said))}", file=self._stderr)

    def _shown_as(self, *parts: str) -> str:
        return os.path.join(self._shown, *parts)

    def _from_folder(self, suite: str, agent: str | None, count: int | None) -> list[HistoryEntry]:
        folder = slug(suite)
        found: list[HistoryEntry] = []
        damaged = 0
        for name in self._names(folder, agent):
            entry = self._entry(folder, name)
            if entry is None:
                damaged += 1
                if damaged == tail_lines.MAX_DAMAGED:
                    self._say(self._shown_as(folder), "older entries", f"{damaged} were damaged")
                    break
            elif entry.suite == suite and agent in (None, entry.agent) and not _partial(entry):
                found.append(entry)
                if len(found) == count:
                    break
        return found

    def _names(self, folder: str, agent: str | None) -> list[str]:
        """The entry names in `folder`, newest first (of `agent`'s runs, as its name says)."""
        path = self.directory / folder
        try:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                self._say(self._shown_as(folder), "history folder", "a symbolic link")
                return []
            if not stat.S_ISDIR(mode):
                self._say(self._shown_as(folder), "history folder", "not a directory")
                return []
            with os.scandir(path) as listing:
                names = [e.name for e in listing if NAME.fullmatch(e.name)]
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._say(self._shown_as(folder), "history folder", why(exc))
            return []
        if agent is not None:  # another agent's name: never read
            names = [n for n in names if agent_of(n) == slug(agent)]
        return sorted(names, reverse=True)

    def _entry(self, folder: str, name: str) -> HistoryEntry | None:
        path = self.directory / folder / name
        key = str(path)
        if key not in self._entries:
            try:
                if path.is_symlink():
                    raise Damaged("a symbolic link is never read as history")
                self._entries[key] = decode(read_bounded(path, history_store.MAX_ENTRY_BYTES))
            except (InputError, Damaged) as exc:
                self._entries[key] = None
                self._say(self._shown_as(folder, name), "history entry", exc.reason)
        return self._entries[key]

    def _line_files(self) -> list[str]:
        """The `*.jsonl` files in the directory itself: an earlier `history.jsonl` moved in."""
        try:
            with os.scandir(self.directory) as listing:
                return sorted(
                    e.name
                    for e in listing
                    if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
                )
        except OSError:
            return []

    def _from_lines(
        self, name: str, suite: str, agent: str | None, count: int | None
    ) -> list[HistoryEntry]:
        shown = self._shown_as(name)
        found: list[HistoryEntry] = []
        try:
            fd, size = open_regular(self.directory / name)
        except InputError as exc:
            self._say(shown, "history file", exc.reason)
            return found
        try:
            numbers = tail_lines.LineNumbers(fd)
            damaged = 0
            for line in tail_lines.newest_first(fd, size):
                if line.data is not None and not line.data.strip():
                    continue
                try:
                    entry = decode_line(line.data)
                except Damaged as exc:
                    self._say(
                        f"{shown}, line {numbers.at(line.offset)}", "history line", exc.reason
                    )
                    damaged += 1
                    if damaged == tail_lines.MAX_DAMAGED:
                        self._say(shown, "earlier lines", f"{damaged} were damaged")
                        break
                    continue
                if entry.suite == suite and agent in (None, entry.agent):
                    found.append(entry)
                    if len(found) == count:
                        break
        except OSError as exc:
            self._say(shown, "earlier lines", why(exc))
        finally:
            os.close(fd)
        return found


def _covers(known: int | None, count: int | None) -> bool:
    """Whether the newest `known` entries (None: all) hold the newest `count`."""
    return known is None or (count is not None and known >= count)


def _last(entries: list[HistoryEntry], count: int | None) -> list[HistoryEntry]:
    return entries if count is None else entries[max(len(entries) - count, 0) :]


def load(directory: Path, suite: str) -> list[HistoryEntry]:
    """Every readable entry of `suite` under `directory`, by any agent, oldest first. A run
    reads only the newest (`History.newest`); this is for tools and tests."""
    return History(directory).newest(suite, None, None)
