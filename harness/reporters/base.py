"""The reporter protocol: what a reporter writes, as cases finish and at the end.

A reporter module declares one `REPORTER` (a `ReporterSpec`): its options, whether it can
be the document on stdout (`--format`), and how to build its reporters from the parsed
options. The pipeline calls `start`, `case_done` as each case finishes, and `finish` with
the whole verdict, reporters in ascending `order`: files (staged, then put in place
together at `COMMIT`), then CI, then stdout. A report that cannot be written is said and
makes the run fail, but the other reports are still written.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TextIO

import msgspec

from harness.io.atomic import Part, ReportFiles, ReportWriteError, write_parts
from harness.io.files import why
from harness.io.problems import Problem
from harness.io.text import clean, inert
from harness.options import Option
from harness.reporters.streamed import Cases, Streamed

if TYPE_CHECKING:
    from harness.tracking.history_reader import History
    from harness.verdict.kept import Passes
    from harness.verdict.reports import CaseReport, SuiteReport

# Reporter orders: what writes files finishes first, the document on stdout last.
FILES, COMMIT, CI, STDOUT = 10, 20, 50, 90

ANNOTATIONS = Option(
    "--annotations",
    "emit GitHub workflow annotations for failing cases and append the summary to "
    "$GITHUB_STEP_SUMMARY (auto: when GITHUB_ACTIONS=true)",
    choices=("auto", "github", "none"),
    default="auto",
)
HISTORY_DIR = "history_dir"  # `--history-dir`'s value, declared by its own reporter


class Output(msgspec.Struct, frozen=True):
    """What reporters are built from: the parsed options, the streams, the environment."""

    values: Mapping[str, Any] = msgspec.field(default_factory=dict)
    stdout_format: str | None = None  # the `--format` choice; None: nothing on stdout
    stdout: TextIO | None = None
    stderr: TextIO | None = None
    environ: Mapping[str, str] = msgspec.field(default_factory=lambda: dict(os.environ))
    # The run's report files, each checked when its reporter is built (before any case).
    files: ReportFiles = msgspec.field(default_factory=ReportFiles)
    # What several reporters of the run read once and share (a history directory's view).
    shared: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def github(self) -> bool:
        """Whether the run is on GitHub Actions (or told to act as if)."""
        mode = self.values.get(ANNOTATIONS.dest) or "auto"
        return mode == "github" or (mode == "auto" and self.environ.get("GITHUB_ACTIONS") == "true")

    def out(self) -> TextIO:
        assert self.stdout is not None
        return self.stdout

    def err(self) -> TextIO:
        assert self.stderr is not None
        return self.stderr

    def history(self) -> History | None:
        """The run's view of `--history-dir` (its value, declared by its own reporter),
        shared by every report that shows it; None without one."""
        directory = self.values.get(HISTORY_DIR)
        if directory is None:
            return None
        from harness.tracking.history_reader import History

        return History.of_run(self.shared, self.stderr, directory)


class Reporter:
    """One output of a run. Every hook is optional; `order` decides when `finish` runs."""

    order: int = FILES
    # Whether it shows passing cases' transcripts, which a run otherwise drops to stay
    # flat in memory (a failing case's is always kept).
    wants_transcripts: bool = False
    # Whether it takes each passing case's transcript as the case is done (`case_done`)
    # and keeps it itself (the last run's state writes it to a file): the run builds them,
    # and drops each once told, so that its memory does not grow with its passes.
    streams_transcripts: bool = False
    # Whether its `finish` reads every case whole (a passing case's record, grades): when
    # no reporter of a run does, the run keeps of a plain pass only what the totals and
    # the summaries need (`reporters.streamed.slimmed`), and its memory stays flat.
    whole_cases: bool = True
    # What a worker process may render of each case for it, sent with the case's report
    # (`harness.run.pool_worker.Prerender`: a class of the harness's, by reference); None:
    # it renders each case itself, as it always may.
    worker_parts: Any = None
    # Whether it writes a plain pass from its worker part alone (or from its id, fixture
    # and score, without one): told such passes a batch at once (`passes_done`,
    # `passes_kept`), it is never told them case by case, and a run whose reporters all
    # take them (or hear no case) has its workers send a plain pass without its report.
    takes_passes: bool = False

    def start(self, total: int) -> None:
        """The run is about to start `total` cases."""

    def named(self, suite: str, agent: str) -> None:
        """The suite and agent the verdict will name, told before any case."""

    def case_done(self, case: CaseReport) -> None:
        """One case finished (in the order cases finish)."""

    def case_kept(self, case: CaseReport) -> None:
        """One case as the verdict will hold it (a passing case's transcript dropped when
        no reporter shows it), in suite order, after every reporter's `case_done`: what a
        report that holds every case writes out, instead of keeping it to the end."""

    def passes_done(self, passes: Passes) -> None:
        """Plain passes done, in the order they finished: `case_done` of each (only a
        reporter that `takes_passes` is told them)."""

    def passes_kept(self, passes: Passes) -> None:
        """Plain passes as the verdict keeps them, following on in suite order: `case_kept`
        of each."""

    def finish(self, report: SuiteReport) -> None:
        """The run is over; write what this reporter writes. A `ReportWriteError` is said
        once every reporter has finished."""

    def refused(self, problems: list[Problem]) -> None:
        """Admission refused the suite; nothing will run."""

    def abandon(self) -> None:
        """The run stopped before its reports were all written (an interruption): undo
        whatever is half done."""


class ReporterSpec(Protocol):
    """What a reporter module declares as `REPORTER`."""

    name: str
    options: tuple[Option, ...]
    # Its name under `--format` when it can be the document on stdout.
    stdout_format: str | None

    def build(self, output: Output) -> list[Reporter]:
        """The reporters the parsed options ask for (none when not asked)."""
        ...


class Document(Reporter):
    """A whole-run document (JSON, JUnit…) written to a file atomically, or to stdout;
    one that holds every case writes them out as they are kept (`Streamed`)."""

    def __init__(
        self,
        render: Rendered | Streamed,
        *,
        path: Path | None = None,
        order: int = FILES,
        files: ReportFiles | None = None,
    ) -> None:
        self._render = render
        # Without the run's files to join, the document is put in place on its own.
        self._alone = files is None
        self._files = files if files is not None else ReportFiles()
        # Checked (and made absolute) now, before the run.
        self._path = None if path is None else self._files.plan(path)
        self._stream: TextIO | None = None
        self.order = order
        if isinstance(render, Streamed):
            render.subscribe(self)
            self.whole_cases = False  # each case is written out as it is kept
            self._follow(render)

    @classmethod
    def to_stream(cls, render: Rendered | Streamed, stream: TextIO) -> Document:
        document = cls(render, order=STDOUT)
        document._stream = stream
        return document

    def named(self, suite: str, agent: str) -> None:
        if isinstance(self._render, Streamed):
            self._render.named(suite, agent)
            self._follow(self._render)  # what a worker renders may name them (JUnit's)

    def _follow(self, render: Streamed) -> None:
        """A plain pass written out as the part its worker renders of it, where it has one."""
        self.worker_parts = render.worker_parts
        self.takes_passes = self.worker_parts is not None

    def case_kept(self, case: CaseReport) -> None:
        if isinstance(self._render, Streamed):
            self._render.add(case, self)

    def passes_kept(self, passes: Passes) -> None:
        if isinstance(self._render, Streamed):
            self._render.add_passes(passes, self)

    def abandon(self) -> None:
        if isinstance(self._render, Streamed):
            self._render.release()

    def finish(self, report: SuiteReport) -> None:
        render = self._render
        if not isinstance(render, Streamed):
            self._write((render(report),))
            return
        try:
            parts = render.parts(report)
        except OSError as exc:
            where = "stdout" if self._path is None else self._files.shown(self._path)
            raise ReportWriteError(f"{where}: cannot write the report: {why(exc)}") from None
        else:
            self._write(parts)
        finally:
            render.release()

    def _write(self, parts: Sequence[Part]) -> None:
        if self._path is not None:
            self._files.stage(self._path, parts)
            if self._alone:
                self._files.commit()
            return
        assert self._stream is not None
        try:
            binary = getattr(self._stream, "buffer", None)
            if binary is not None:
                self._stream.flush()
                write_parts(binary, parts)
                binary.flush()
            else:
                whole = io.BytesIO()
                write_parts(whole, parts)
                self._stream.write(whole.getvalue().decode("utf-8"))
                self._stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe, a full disk; ValueError: closed
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ReportWriteError(f"stdout: cannot write the report: {why}") from None


class HeldParts:
    """The store of a reporter's worker parts (`harness.run.pool_worker.Prerender`): what a
    worker rendered of each report, held by the report's identity with the report itself
    (so a later report at the same address is never taken for it) until it is used or let
    go. A subclass says what it renders and holds; its class holds the store (`_held`)."""

    _held: ClassVar[dict[int, tuple[Any, ...]]]

    @classmethod
    def drop(cls, case: CaseReport) -> None:
        cls._held.pop(id(case), None)  # held, `case` is alive: no other report has its id

    @classmethod
    def release(cls) -> None:
        cls._held.clear()

    @classmethod
    def held(cls, case: CaseReport, take: bool = False) -> tuple[Any, ...] | None:
        """What is held for `case` (taken out with `take`): its parts after the report."""
        held = cls._held.pop(id(case), None) if take else cls._held.get(id(case))
        return held[1:] if held is not None and held[0] is case else None


class Rendered:
    """A renderer that renders each report once, however many destinations it has."""

    def __init__(self, render: Callable[[SuiteReport], bytes]) -> None:
        self._render = render
        self._for: SuiteReport | None = None
        self._data = b""

    def __call__(self, report: SuiteReport) -> bytes:
        if self._for is not report:
            self._data, self._for = self._render(report), report
        return self._data


def documents(
    output: Output,
    option: Option,
    stdout_format: str,
    render: Callable[[SuiteReport], bytes],
    order: int = FILES,
    *,
    cases: Callable[[Path | None], Cases] | None = None,
) -> list[Reporter]:
    """A file at `option`'s path when given (written at `order`), and the stdout document
    when `--format` is `stdout_format`; rendered once for both. With `cases` (the
    document's form, given the directory its spools go in) it is written as cases are
    kept, and `render` is only what its parts equal."""
    path = output.values.get(option.dest)
    once = Streamed(cases(spool_directory(path))) if cases is not None else Rendered(render)
    reporters: list[Reporter] = []
    if path is not None:
        reporters.append(Document(once, path=Path(path), order=order, files=output.files))
    if output.stdout_format == stdout_format:
        reporters.append(Document.to_stream(once, output.out()))
    return reporters


def spool_directory(path: Path | str | None) -> Path | None:
    """Where the spools of a report at `path` go: beside it when its folder exists (the
    copy into it stays on one file system), else the system's temporary folder."""
    if path is None:
        return None
    folder = Path(os.path.abspath(Path(path))).parent
    return folder if folder.is_dir() else None


class Commit(Reporter):
    """Puts the run's staged report files in place, together, after every file reporter."""

    order = COMMIT
    whole_cases = False

    def __init__(self, files: ReportFiles) -> None:
        self._files = files

    def finish(self, report: SuiteReport) -> None:
        self._files.commit()

    def abandon(self) -> None:
        self._files.abort()


def skipped_as_partial(report: SuiteReport, stderr: TextIO) -> bool:
    """Whether `report` is of a partial run, which no history holds (a point of the trend
    is always the whole suite), said on `stderr` when it is."""
    if report.partial is None:
        return False
    say(stderr, f"history entry not written: a partial run ({report.partial})")
    return True


def say(stderr: TextIO, said: str) -> None:
    """A reporter's message on `stderr`: the run's text in it (case ids, paths, reasons)
    cleaned and made inert, as every message is."""
    print(f"zeroclaw eval: {inert(clean(said))}", file=stderr)
