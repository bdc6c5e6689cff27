"""The versioned JSON report document: `--json-report PATH`, `--format json`.

It keeps the exact text of the run, escaped: only a lone surrogate (which UTF-8 cannot
encode) becomes U+FFFD, and what a terminal or a GitHub runner would act on (C1 controls,
bidirectional formatting, `##[`) is written as a JSON escape (`text.json_safe`). A run
writes its cases out as they are kept, `BATCH` formatted at once (`JsonCases`,
`harness.reporters.streamed`), never the whole document in memory: the same bytes.

Every run also keeps its report for `show` (`LastRun`), with its passing cases' transcripts
beside it, written out as cases are done (`BATCH` at once), one JSON line a case, to a file
staged in the same folder. At the end that file is put in place as `transcripts-<token>.jsonl`,
then the report naming it (`$.transcripts`) replaces the previous one, and the earlier runs'
transcripts are removed (`harness.reporters.last_run` reads them back). An interrupted run
leaves the previous run's as they were. Keeping them never fails a run: a failure to is
said. Under `--jobs N` each case's part and transcript line come formatted by its worker
(`WorkerParts`)."""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, TextIO, cast

from harness.io.atomic import (
    FILE_MODE,
    Part,
    ReportFiles,
    ReportWriteError,
    copy_into,
    own_folder,
)
from harness.io.text import encoded_json, json_safe
from harness.options import Option
from harness.reporters.base import COMMIT, FILES, HeldParts, Output, Reporter, documents, say
from harness.runtime import interrupts

if TYPE_CHECKING:
    from harness.reporters.last_run import KeptTranscript
    from harness.verdict.kept import Passes
    from harness.verdict.reports import CaseReport, SuiteReport

OPTION = Option("--json-report", "also write the JSON report here", metavar="PATH", type=Path)


def __getattr__(name: str) -> Any:
    # `ReportDocument` stays importable for readers of the JSON report.
    if name == "ReportDocument":
        from harness.verdict.reports import document_type

        return document_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def render_json(report: SuiteReport, transcripts: str | None = None) -> bytes:
    return _render(report, transcripts, list(report.cases))


def _render(report: SuiteReport, transcripts: str | None, cases: list[CaseReport]) -> bytes:
    import msgspec

    from harness.verdict.reports import SCHEMA, document_type

    document = document_type()(
        schema=SCHEMA,
        suite=report.suite,
        kind=report.kind,
        mode=report.mode,
        agent=report.agent,
        exit_code=int(report.exit_code()),
        all_passed=report.all_passed,
        totals=report.totals,
        statistics=report.statistics,
        receipt=report.receipt,
        partial=report.partial,
        duration_ms=report.duration_ms,
        cases=cases,
        baseline=report.baseline,
        unused_snapshots=report.unused_snapshots,
        transcripts=transcripts,
    )
    return inert_json(msgspec.json.format(encoded_json(document), indent=2)) + b"\n"


def inert_json(encoded: bytes) -> bytes:
    """JSON text with what a terminal or a runner would act on escaped (`json_safe`)."""
    # One-byte searches first: a report seldom holds `#` or DEL, and they are the fast kind.
    if not encoded.isascii() or b"\x7f" in encoded or (b"#" in encoded and b"##[" in encoded):
        return json_safe(encoded.decode("utf-8")).encode("utf-8")
    return encoded


# Where the cases go in the document rendered without them: the one key at the top level
# that holds a list (every nested key is indented further, no string holds a raw newline).
_NO_CASES = b'\n  "cases": [],\n'
_SEPARATOR = b",\n"  # between two cases of the list
# A case formatted two lists deep is indented as the document's cases are: what the format
# puts around it (`[`, `  [`, and their ends) is cut off, the case's own indent kept.
_AROUND_CASE = (len(b"[\n  [\n"), len(b"\n  ]\n]"))


def case_part(case: CaseReport) -> bytes:
    """`case` as the JSON report's cases list holds it, formatted and indented (a worker
    process may have formatted it: `WorkerParts`)."""
    part = WorkerParts.part(case)
    return _formatted(case) if part is None else part


def _formatted(case: CaseReport) -> bytes:
    return _formatted_all([case])


# Cases (and transcript lines) formatted together, this many at most: one encoding and
# one format of the lot, where a call of each per case cost as much again as the bytes.
BATCH = 64


def _formatted_all(cases: list[CaseReport]) -> bytes:
    """`cases`' parts joined as the cases' list joins them (`_SEPARATOR`): one format of
    them all, two lists deep, as each is alone. The last batch's is kept: the report for
    `show` and `--json-report` each write the same cases, formatted once for both."""
    import msgspec

    global _last_batch
    last = _last_batch
    if last is not None and len(last[0]) == len(cases) and all(map(operator.is_, last[0], cases)):
        return last[1]
    head, tail = _AROUND_CASE
    formatted = msgspec.json.format(b"[" + encoded_json(cases) + b"]", indent=2)
    # The separator and the indent between two cases are ASCII without `#`: what
    # `inert_json` escapes in the lot is what it escapes in each.
    part = inert_json(formatted[head:-tail])
    _last_batch = (tuple(cases), part)
    return part


def _transcript_line(case: CaseReport) -> bytes | None:
    """A passing case's transcript as the last run keeps it beside its report, one JSON
    line; None for a case that keeps none there."""
    kept = _kept_transcript(case)
    return None if kept is None else _lines([kept])


def _kept_transcript(case: CaseReport) -> KeptTranscript | None:
    record = case.record
    if not case.passed or record is None or record.transcript is None:
        return None
    return _kept_type()(id=case.id, fixture=case.fixture, transcript=record.transcript)


@functools.cache  # imported once, not at every case (`--help` imports this module)
def _kept_type() -> type[KeptTranscript]:
    from harness.reporters.last_run import KeptTranscript

    return KeptTranscript


def _lines(kept: list[KeptTranscript]) -> bytes:
    """The lines of `kept`, one after another: one encoding of them all."""
    import msgspec

    try:
        encoded = msgspec.json.Encoder().encode_lines(kept)
    except (TypeError, ValueError, RecursionError):  # a lone surrogate, or what no JSON
        # has (put in what an agent sent, after it was checked): each line alone
        encoded = b"".join(encoded_json(one) + b"\n" for one in kept)
    return inert_json(encoded)  # lines start with `{`, end with `}`: as each alone


class WorkerParts(HeldParts):
    """What a worker process renders of each report for the last run kept for `show` and
    the JSON report (`harness.run.pool_worker.Prerender`), in a run that drops a passing
    case's transcript once its `case_done` is told (`pipeline`): the case's transcript
    line, and its part of the document as it is kept, transcript dropped. A part is used
    only for the report it came with, and only in that state; else it is made here."""

    # A run that keeps passing transcripts (a report shows them) would use none of them.
    only_when_transcripts_dropped = True
    # A plain pass's transcript line and part, written by its worker into files of its
    # own (`harness.run.pool_worker._Streams`), one after another (the parts as the cases'
    # list joins them), and copied from there into the transcripts and the report.
    streams = (b"", _SEPARATOR)
    # Each report's transcript line, its part, and whether the part is that of the report
    # with its transcript dropped.
    _held: ClassVar[dict[int, tuple[Any, ...]]] = {}

    @staticmethod
    def render(case: CaseReport) -> tuple[bytes | None, bytes, bool]:
        import msgspec

        line = _transcript_line(case)
        record = case.record
        kept, dropped = case, False
        if case.passed and record is not None:
            plain = msgspec.structs.replace(record, transcript=None)
            kept, dropped = msgspec.structs.replace(case, record=plain), True
        return line, _formatted(kept), dropped

    @staticmethod
    def spill(parts: object) -> tuple[bytes | None, bytes]:
        line, part, _ = cast("tuple[bytes | None, bytes, bool]", parts)  # what `render` made
        return line, part

    @staticmethod
    def unspill(streams: tuple[bytes | None, ...]) -> tuple[bytes | None, bytes, bool]:
        line, part = streams
        assert part is not None  # every pass has its part
        return line, part, True  # a plain pass's, rendered with its transcript dropped

    @classmethod
    def hold(cls, case: CaseReport, parts: object) -> None:
        made = cast("tuple[bytes | None, bytes, bool]", parts)  # what `render` made
        cls._held[id(case)] = (case, *made)

    @classmethod
    def line(cls, case: CaseReport) -> bytes | None:
        held = cls.held(case)
        return cast("bytes | None", held[0]) if held is not None else _transcript_line(case)

    @classmethod
    def part(cls, case: CaseReport) -> bytes | None:
        held = cls.held(case, take=True)
        if held is None:
            return None
        record = case.record
        if held[2] and (record is None or record.transcript is not None):
            return None  # rendered with the transcript dropped, which this run kept
        return cast(bytes, held[1])


_last_batch: tuple[tuple[CaseReport, ...], bytes] | None = None


class JsonCases:
    """The JSON report written as its cases are kept (`harness.reporters.streamed`): each
    case formatted as the whole document formats it, where it puts it."""

    worker_parts = WorkerParts

    def __init__(self, directory: Path | None = None, transcripts: str | None = None) -> None:
        from harness.reporters.streamed import SpooledList

        self._cases = SpooledList(_SEPARATOR, directory)
        self.transcripts = transcripts  # the last run's report names its transcripts file
        # The cases kept and not yet formatted (`BATCH` at most): formatted together.
        self._pending: list[CaseReport] = []

    def named(self, suite: str, agent: str) -> None:
        pass  # a case's JSON does not name them

    def add(self, case: CaseReport) -> None:
        part = WorkerParts.part(case)
        if part is not None:
            self._format()
            self._cases.append(part)
            return
        pending = self._pending
        pending.append(case)
        if len(pending) >= BATCH:
            self._format()

    def _format(self) -> None:
        """The cases pending formatted into the spool, after those before them."""
        pending = self._pending
        if pending:
            self._pending = []  # a new list: the last batch formatted is kept as it is
            self._cases.append(_formatted_all(pending))

    def add_passes(self, passes: Passes) -> None:
        self._format()
        spilled = passes.spilled(WorkerParts)
        if spilled is not None:  # copied from where its workers wrote them
            self._cases.extend_from(spilled[1])
            return
        made = cast("list[tuple[bytes | None, bytes, bool]]", passes.parts(WorkerParts))
        self._cases.extend([part for _, part, _ in made])

    def parts(self, report: SuiteReport) -> Sequence[Part]:
        self._format()
        empty = _render(report, self.transcripts, [])
        if not self._cases.count:
            return (empty,)
        head, tail = empty.split(_NO_CASES, 1)
        return (head, b'\n  "cases": [\n', self._cases.spool, b"\n  ],\n", tail)

    def whole(self, report: SuiteReport) -> bytes:
        return render_json(report, self.transcripts)

    def close(self) -> None:
        self._pending = []
        self._cases.spool.close()

    def spool_in(self, directory: Path) -> None:
        """Spool in `directory` (before any case is kept)."""
        self._cases.spool.directory = directory


class LastRun(Reporter):
    """Keeps the last run's report and its passing cases' transcripts for `show`."""

    order = COMMIT + 3
    streams_transcripts = True
    whole_cases = False
    worker_parts = WorkerParts
    takes_passes = True

    def __init__(self, stderr: TextIO) -> None:
        # Imported here: `--help` imports this module, and never the transcripts' types.
        from harness.reporters.last_run import LAST_FOLDER

        self._folder = Path(os.path.abspath(Path.cwd() / LAST_FOLDER))  # fixed before the run
        self._stderr = stderr
        self._name = f"transcripts-{os.urandom(16).hex()}.jsonl"  # as secrets.token_hex(16) does
        self._staged: Path | None = None  # the transcripts as they are written
        self._handle: IO[bytes] | None = None
        self._placed: Path | None = None  # put in place, its report not yet
        # Passing cases' transcripts not yet written (`_write_lines`).
        self._lines: list[KeptTranscript] = []
        self._off = False
        from harness.reporters.streamed import Streamed

        self._report = JsonCases(self._folder if self._folder.is_dir() else None)
        self._document = Streamed(self._report)
        self._document.subscribe(self)

    def start(self, total: int) -> None:
        try:
            own_folder(self._folder, ignore=b"*\n")
            # The report's spool in its folder, where it is copied to.
            self._report.spool_in(self._folder)
            with interrupts.held():  # a staged file is never created without being known
                fd, name = tempfile.mkstemp(
                    prefix=".transcripts-", suffix=".partial", dir=self._folder
                )
                self._staged = Path(name)
            # A buffer of many cases' lines: what is staged is discarded unless put in place.
            self._handle = os.fdopen(fd, "wb", buffering=1 << 16)
            os.fchmod(fd, FILE_MODE)
        except (OSError, ReportWriteError) as exc:
            self._discard()
            self._off = True  # said once, here: the end would fail the same way
            self._say(f"the last run was not kept for `show`: {exc}")

    def case_done(self, case: CaseReport) -> None:
        if self._handle is None:
            return
        held = WorkerParts.held(case)
        kept = _kept_transcript(case) if held is None else None
        if kept is not None:  # encoded with those after it (`BATCH` at most), at once
            self._lines.append(kept)
            if len(self._lines) < BATCH:
                return
        elif held is None or held[0] is None:
            return
        try:
            self._write_lines()
            if held is not None:
                self._handle.write(held[0])
        except OSError as exc:
            self._give_up(exc)

    def _write_lines(self) -> None:
        """The lines pending written, after those before them (`OSError` when they cannot
        be: the caller gives up)."""
        pending, handle = self._lines, self._handle
        if pending and handle is not None:
            self._lines = []
            handle.write(_lines(pending))

    def passes_done(self, passes: Passes) -> None:
        if self._handle is None:
            return
        spilled = passes.spilled(WorkerParts)
        try:
            self._write_lines()
            if spilled is not None:  # copied from where its workers wrote them
                for file, offset, length, _, _ in spilled[0]:
                    copy_into(self._handle, file.fileno(), offset, length)
                return
            made = cast("list[tuple[bytes | None, bytes, bool]]", passes.parts(WorkerParts))
            self._handle.write(b"".join(line for line, _, _ in made if line is not None))
        except OSError as exc:
            self._give_up(exc)

    def case_kept(self, case: CaseReport) -> None:
        if not self._off:
            self._document.add(case, self)

    def passes_kept(self, passes: Passes) -> None:
        if not self._off:
            self._document.add_passes(passes, self)

    def finish(self, report: SuiteReport) -> None:
        if self._off:
            self._document.release()
            return
        from harness.reporters.last_run import LAST_NAME

        files = ReportFiles()
        try:
            own_folder(self._folder, ignore=b"*\n")
            named = self._place_transcripts()
            path = files.plan(self._folder / LAST_NAME, devices=False)
            self._report.transcripts = named
            files.stage(path, self._document.parts(report))
            with interrupts.held():  # the report in place is the one naming them
                files.commit()
                self._placed = None
        except (OSError, ReportWriteError) as exc:
            files.abort()
            self._discard()
            self._say(f"the last run was not kept for `show`: {exc}")
            return
        finally:
            self._document.release()
        self._remove_earlier(named)

    def abandon(self) -> None:
        self._document.release()
        self._discard()

    def _place_transcripts(self) -> str | None:
        """The staged transcripts put in place: their name, None when there are none."""
        handle, staged = self._handle, self._staged
        if handle is None or staged is None:
            return None
        try:
            self._write_lines()
        except OSError as exc:  # as a case's line that could not be written is
            self._give_up(exc)
            return None
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        self._handle = None
        placed = self._folder / self._name
        with interrupts.held():
            os.replace(staged, placed)
            self._staged, self._placed = None, placed
        return self._name

    def _remove_earlier(self, kept: str | None) -> None:
        """The earlier runs' transcripts: no report names them any more."""
        from harness.reporters.last_run import TRANSCRIPTS

        with contextlib.suppress(OSError), os.scandir(self._folder) as entries:
            for entry in entries:
                if entry.name != kept and TRANSCRIPTS.fullmatch(entry.name):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    def _give_up(self, exc: OSError) -> None:
        """No transcript of this run is kept (the report still is, naming none)."""
        self._discard()
        self._say(f"the passing cases' transcripts were not kept for `show`: {exc}")

    def _say(self, message: str) -> None:
        say(self._stderr, message)

    def _discard(self) -> None:
        """Nothing of this run's state stays behind: the previous run's is as it was."""
        handle, self._handle = self._handle, None
        self._lines = []
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()
        for path in (self._staged, self._placed):
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
        self._staged = self._placed = None


class _Spec:
    name = "json"
    options = (OPTION,)
    stdout_format = "json"

    def build(self, output: Output) -> list[Reporter]:
        reporters = documents(
            output, OPTION, self.stdout_format, render_json, FILES + 1, cases=JsonCases
        )
        return [*reporters, LastRun(output.err())]


REPORTER = _Spec()
