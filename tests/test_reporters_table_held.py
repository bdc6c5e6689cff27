"""`harness.reporters.table.Held`: through a pipe or into a file the table's lines are
flushed together, not one system call per case; a line never waits for the next case (the
table's thread flushes it), every line is out as the last case is told, before the summary
and before an interruption is said; on a terminal each case's line is flushed at once."""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator

import pytest
from conftest import failing_report, passing_report, suite_report

from harness.io.atomic import ReportWriteError
from harness.reporters import table
from harness.reporters.delivery import Delivery
from harness.reporters.table import Held, TableReporter, holds

# Long enough that no flush of the table's thread is due while a test runs: what is
# flushed is what the table flushed itself.
NEVER = 3600.0
WAIT = 30.0  # how long a test waits for the table's thread before it fails


class Pipe(io.StringIO):
    """A stream on a descriptor (a pipe, or a terminal with `tty`): what each flush sent."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty
        self.flushed: list[str] = []
        self.broken = False
        self.flushing = threading.Event()

    def fileno(self) -> int:
        return 99  # never used as a descriptor

    def isatty(self) -> bool:
        return self.tty

    def flush(self) -> None:
        if self.broken:
            self.flushing.set()
            raise BrokenPipeError(32, "Broken pipe")
        self.flushed.append(self.getvalue())
        self.flushing.set()  # once what it sent is there to be read

    @property
    def out(self) -> str:
        """What reached the pipe's reader."""
        return self.flushed[-1] if self.flushed else ""


@pytest.fixture
def never(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(table, "HOLD_SECS", NEVER)
    yield


class Paused:
    """The pause of a `Held`'s thread, ended by the test (`release`), not by a clock."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._released = threading.Event()

    def __call__(self) -> None:
        self.reached.set()
        assert self._released.wait(WAIT)

    def release(self) -> None:
        self._released.set()


def line(case_id: str) -> str:
    return f"  ✓ {case_id} (evals/regression/{case_id}.json)  1/1 checks\n"


def test_the_table_holds_lines_on_a_descriptor_that_is_no_terminal() -> None:
    assert holds(Pipe())
    assert not holds(Pipe(tty=True))
    assert not holds(io.StringIO())  # no descriptor: a flush costs nothing


def test_through_a_pipe_the_cases_lines_are_flushed_together_not_one_by_one(
    never: None,
) -> None:
    stream = Pipe()
    reporter = TableReporter(stream)
    cases = [passing_report(f"c{i}") for i in range(3)]
    reporter.start(3)
    reporter.case_done(cases[0])
    reporter.case_done(cases[1])
    assert stream.flushed == []
    assert stream.getvalue() == "\n" + line("c0") + line("c1")
    reporter.case_done(cases[2])  # the last: every line is out before the run goes on
    assert stream.flushed == ["\n" + line("c0") + line("c1") + line("c2")]
    reporter.finish(suite_report("regression", *cases))
    assert len(stream.flushed) == 2  # and the summary, at once
    assert stream.out == stream.getvalue()
    assert "\n  3/3 cases passed" in stream.out


def test_on_a_terminal_each_cases_line_is_flushed_as_it_is_done(never: None) -> None:
    stream = Pipe(tty=True)
    reporter = TableReporter(stream)
    reporter.start(3)
    for i in range(2):
        reporter.case_done(passing_report(f"c{i}"))
    assert len(stream.flushed) == 2
    assert "c1" in stream.out


def test_a_held_line_is_flushed_without_waiting_for_the_next_write() -> None:
    # A slow case after fast ones: nothing more is written for a while, and the lines of
    # the fast ones go out all the same, once the pause (`HOLD_SECS`) is over.
    stream, paused = Pipe(), Paused()
    held = Held(stream, pause=paused)
    held.start()
    held.write(line("fast"))
    assert paused.reached.wait(WAIT)
    assert stream.flushed == []
    paused.release()
    assert stream.flushing.wait(WAIT)
    assert stream.flushed == [line("fast")]
    held.close()


def test_a_line_is_held_no_longer_than_half_a_second() -> None:
    assert 0 < table.HOLD_SECS <= 0.5


def test_no_thread_appears_while_the_cases_are_told(never: None) -> None:
    # The watchdog runs the next case in the task of the one before only when no thread
    # appeared while it ran: the table's thread is started with the run, before any case.
    reporter = TableReporter(Pipe())
    reporter.start(3)
    before = set(threading.enumerate())
    assert any(t.name == "zeroclaw-eval-table" for t in before)
    reporter.case_done(passing_report("c0"))
    reporter.case_done(failing_report("c1"))
    assert set(threading.enumerate()) <= before
    reporter.abandon()


def test_no_thread_for_a_run_of_no_case() -> None:
    before = set(threading.enumerate())
    stream = Pipe()
    reporter = TableReporter(stream)
    reporter.start(0)
    assert set(threading.enumerate()) <= before
    reporter.finish(suite_report("regression"))
    assert stream.out.startswith("\n\n  0/0 cases passed")


def test_an_interruption_flushes_the_lines_held_before_it_is_said(never: None) -> None:
    stream = Pipe()
    reporter = TableReporter(stream)
    reporter.start(5)
    reporter.case_done(passing_report("c0"))
    reporter.case_done(passing_report("c1"))
    assert stream.flushed == []
    Delivery([reporter]).abandon()
    assert stream.out == "\n" + line("c0") + line("c1")


def test_the_summary_is_flushed_when_a_case_was_never_told(never: None) -> None:
    stream = Pipe()
    reporter = TableReporter(stream)
    reporter.start(2)
    case = passing_report("c0")
    reporter.case_done(case)
    reporter.finish(suite_report("regression", case))
    assert stream.out.startswith("\n" + line("c0") + "\n  1/1 cases passed")


def test_a_flush_that_failed_is_raised_where_the_table_writes_next() -> None:
    stream, paused = Pipe(), Paused()
    held = Held(stream, pause=paused)
    held.start()
    held.write(line("c0"))
    stream.broken = True
    paused.release()
    assert held.ended(WAIT)
    with pytest.raises(BrokenPipeError):
        held.write(line("c1"))
    with pytest.raises(BrokenPipeError):
        held.close()


def test_a_pipe_closed_under_the_table_stops_it_alone_and_is_said_at_the_end(
    never: None,
) -> None:
    stream = Pipe()
    reporter = TableReporter(stream)
    delivery = Delivery([reporter])
    delivery.start(2)
    delivery.case_done(passing_report("c0"))
    stream.broken = True
    delivery.case_done(passing_report("c1"))  # the last: flushed, and found closed
    with pytest.raises(ReportWriteError, match=r"could not be written \(Broken pipe\)"):
        delivery.finish(suite_report("regression", passing_report("c0")))


def test_on_github_the_held_chunks_are_fenced_as_the_flushed_ones(never: None) -> None:
    def told(stream: io.StringIO) -> str:
        reporter = TableReporter(stream, guard=True)
        cases = [passing_report("c0"), failing_report("c1")]
        reporter.start(2)
        for case in cases:
            reporter.case_done(case)
        reporter.finish(suite_report("regression", *cases))
        tokens = dict.fromkeys(re.findall(r"::stop-commands::([0-9a-f]{32})", stream.getvalue()))
        text = stream.getvalue()
        for n, token in enumerate(tokens):
            text = text.replace(token, f"token{n}")
        return text

    held = Pipe()
    shown = told(held)
    assert shown == told(io.StringIO())
    assert held.out == held.getvalue()
    assert shown.count("::stop-commands::") == 3  # each case's lines, and the summary


class Stuck(Pipe):
    """A pipe its reader stopped reading: a flush waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def flush(self) -> None:
        self.flushing.set()
        assert self.go.wait(WAIT)
        self.flushed.append(self.getvalue())


def test_an_interruption_does_not_wait_for_a_reader_that_stopped_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One Ctrl-C ends the run even when the flush of the table's thread is held by a full
    # pipe: the interruption waits for it a moment only, and leaves it to its thread.
    monkeypatch.setattr(table, "ABANDON_SECS", 0.01)
    stream, paused = Stuck(), Paused()
    reporter = TableReporter(stream)
    held = reporter._held
    assert held is not None
    held._pause = paused
    reporter.start(3)
    reporter.case_done(passing_report("c0"))
    paused.release()
    assert stream.flushing.wait(WAIT)  # the thread's flush, held by the pipe
    Delivery([reporter]).abandon()
    assert not stream.go.is_set() and not held.ended(0)  # returned, the flush still held
    stream.go.set()
    assert held.ended(WAIT)


def test_a_write_that_failed_ends_the_tables_thread() -> None:
    class Closed(Pipe):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    stream = Closed()
    held = Held(stream)
    held.start()
    with pytest.raises(BrokenPipeError):
        held.write(line("c0"))
    assert held.ended(WAIT)


def test_the_last_batch_of_passes_flushes_every_line(never: None) -> None:
    from harness.verdict.kept import Passes

    stream = Pipe()
    reporter = TableReporter(stream, jobs=2)
    cases = [passing_report(f"c{n}") for n in range(3)]
    reporter.start(len(cases))
    held = reporter._held
    assert held is not None
    parts = reporter.worker_parts
    made = [(n, case.id, case.score, (parts.render(case),)) for n, case in enumerate(cases)]
    reporter.passes_done(Passes((parts,), made[:2]))
    assert stream.flushed == []
    reporter.passes_done(Passes((parts,), made[2:]))  # the last: every line is out
    assert stream.out == stream.getvalue() and "c2" in stream.out
    assert held.ended(0)  # and its thread is over before the reports are written


def test_a_process_out_of_threads_shows_each_line_as_it_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(self: Held) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(Held, "start", refused)
    stream = Pipe()
    reporter = TableReporter(stream)
    reporter.start(3)
    reporter.case_done(passing_report("c0"))
    assert stream.out == "\n" + line("c0")
