"""The human table on stdout (`--format table`, the default): one line per case as it
finishes, failing checks under it, a summary line.

A repeated case's line says how many runs passed, the pass rate with its 95% Wilson
interval (named so: it is over the case's runs), the case's own bar (`needs ≥ 80%`) and
whether it is flaky; the lines under it give pass@1 and pass^n, the checks that flipped
between runs, the note, and the first failing run's checks. A case the run stopped before
is marked `-`, not run. When the run had repeated or clustered cases (live only), a second
summary line gives the suite's pass rate with its interval and what it rests on; a replay
samples nothing and has no interval. With several jobs, or many cases, cases finish out of
order: each streamed line then starts with a `[done/total]` counter.

Every string is cleaned (`text.clean`) and no line is a workflow command (`text.inert`);
on GitHub Actions each chunk is also written between `::stop-commands::` and its token.

On a terminal each case's lines are shown as the case finishes. Through a pipe or into a
file (a CI runner's log) they are flushed together, at most `HOLD_SECS` after they were
written, by a thread of the table's own (`Held`), and all of them as the last case is told
(before the reports are written), or before the summary of a run stopped early
(`--maxfail`), or as the run is interrupted. Other lines of the run on stderr (an agent's
output, a note of the harness) may then come up to `HOLD_SECS` ahead of the table's lines
before them in a log that holds both."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TextIO, cast

from harness.io.text import clean, clean_lines, command_token, inert, stop_commands
from harness.reporters.base import STDOUT, HeldParts, Output, Reporter
from harness.snapshots.groups import Changes, unfolded
from harness.verdict.kept import plain_passes

if TYPE_CHECKING:
    from harness.verdict.kept import Passes
    from harness.verdict.reports import CaseReport, RepeatStats, SuiteReport

# From this many cases on, the streamed lines are counted even with one job: a long run's
# reader wants to know how far it got.
COUNT_FROM = 20
MAX_LISTED = 10  # failing run numbers and flipped checks listed on a case's line
# The longest a line written through a pipe or into a file waits to be flushed.
HOLD_SECS = 0.2
# The longest an interruption waits for the lines held to be flushed.
ABANDON_SECS = 1.0
# Escaped: the source stays ASCII where a reader could mistake them for `-` and `x`.
DASH, TIMES = "\u2013", "\u00d7"  # en dash, multiplication sign


def use_colour(stream: TextIO) -> bool:
    # no-color.org: only a non-empty NO_COLOR turns colour off.
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"


def _interval(low: float, high: float) -> str:
    """`[64-95%]`, with an en dash."""
    return f"[{low * 100:.0f}{DASH}{high * 100:.0f}%]"


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")


def _icon(case: CaseReport, colour: bool) -> str:
    if case.not_run is not None:
        return _paint("-", "33", colour)
    return _paint("✓", "32", colour) if case.passed else _paint("✗", "31", colour)


def _runs(stats: RepeatStats, colour: bool) -> str:
    """`17/20 runs  85% (95% Wilson interval 64-95%)  needs ≥ 80%  flaky` (an en dash in
    the interval)."""
    parts = [f"{stats.passes}/{stats.completed} runs"]
    if stats.completed < stats.requested:
        parts[0] += f" ({stats.requested - stats.completed} of {stats.requested} errored)"
    if stats.completed:
        low, high = stats.interval
        wilson = f"95% Wilson interval {low * 100:.0f}{DASH}{high * 100:.0f}%"
        parts.append(f"{_percent(stats.proportion)} ({wilson})")
    if stats.min_pass_rate is not None:
        parts.append(f"needs ≥ {stats.min_pass_rate * 100:g}%")
    if stats.flaky:
        parts.append(_paint("flaky", "33", colour))
    return "  ".join(parts)


def _repeat_lines(stats: RepeatStats, checks_follow: bool) -> list[str]:
    """The lines under a repeated case: pass@1 and pass^n, the flips, the note, and which
    runs failed (the first one's checks follow when `checks_follow`)."""
    curve = f"pass@1 {stats.pass_at_k[0]:.2f}" if stats.pass_at_k else "no run completed"
    if stats.pass_hat_k:
        curve += f"  pass^{len(stats.pass_hat_k)} {stats.pass_hat_k[-1]:.2f}"
    else:
        curve += "  pass^k not established (a run errored)"
    lines = [f"      {curve}"]
    if stats.flips:
        ranked = sorted(stats.flips.items(), key=lambda item: -item[1])
        lines.append(f"      flipped: {_listed([f'{clean(c)} {TIMES}{n}' for c, n in ranked])}")
    if stats.note:
        first, *rest = clean_lines(stats.note).split("\n")
        lines.append(f"      note: {first}")
        lines.extend(f"        {line}" for line in rest)
    failing = [r.run for r in stats.runs if not r.passed]
    if failing:
        then = f"; run {failing[0]}:" if checks_follow else ""
        lines.append(f"      failing runs: {_listed([str(n) for n in failing])}{then}")
    return lines


def _all_passed(case: CaseReport) -> bool:
    """Whether `case` passed a single run (no error) with every check it has, each of them
    deciding it: its line says so and nothing goes under it."""
    if not case.passed or case.repeat is not None or case.error is not None or case.not_run:
        return False
    return all(g.passed and not g.warn and g.judge is None for g in case.grades)


def render_case(
    case: CaseReport,
    colour: bool = False,
    counter: str = "",
    folded: Mapping[str, str] | None = None,
) -> str:
    """A case's lines; `counter` (`[3/20] `) starts the first; `folded`: what to say in
    place of a detail an earlier case showed (a shared snapshot change)."""
    head = f"  {counter}{_icon(case, colour)} {clean(case.id)} ({clean(case.fixture)})"
    if _all_passed(case):  # most cases: one line, no check to list under it
        checks = len(case.grades)
        return inert(f"{head}  {checks}/{checks} checks") + "\n"
    if case.not_run is not None:
        return inert(f"{head}  not run: {clean(case.not_run)}") + "\n"
    stats = case.repeat
    if stats is not None:
        head += f"  {_runs(stats, colour)}"
    if case.error is not None:
        first, *rest = clean_lines(case.error).split("\n")
        lines = [f"{head}  —  run error: {first}"]
        lines.extend(f"      {line}" for line in rest)
        if stats is not None:
            lines += _repeat_lines(stats, checks_follow=False)
        return inert("\n".join(lines)) + "\n"
    if stats is None:
        passed = sum(g.passed for g in case.grades)
        lines = [f"{head}  {passed}/{len(case.grades)} checks"]
    else:
        lines = [head, *_repeat_lines(stats, checks_follow=bool(case.failing_grades))]
    for grade in case.failing_grades:
        detail = (folded or {}).get(grade.detail, grade.detail)
        first, *rest = clean_lines(detail).split("\n")
        lines.append(f"      {_paint('✗', '31', colour)} {clean(grade.check)}: {first}")
        lines.extend(f"        {line}" for line in rest)
    if not case.passed and not case.failing_grades:
        lines.append(f"      {_paint('✗', '31', colour)} {clean(case.first_failure())}")
    for line in case.diagnostic_lines():
        lines.append(f"      ~ {clean_lines(unfolded(line, folded or {}))}")
    return inert("\n".join(lines)) + "\n"


def _statistics(report: SuiteReport) -> str | None:
    """The suite's pass rate with its interval, for a run with repeated or clustered cases;
    None for an ordinary run, whose summary stays one line."""
    # A plain pass held as a byte (`plain_passes`) is neither repeated nor clustered: only
    # the cases held whole are looked at, none made again.
    whole, _ = plain_passes(report.cases)
    if not any(c.repeat is not None or c.cluster is not None for c in whole):
        return None
    stats = report.statistics
    if not stats.cases:
        return "  pass rate unavailable: no case completed"
    line = f"  pass rate {_percent(stats.pass_rate)}"
    if stats.low is not None and stats.high is not None:
        line += f" {_interval(stats.low, stats.high)}"
    line += f", {clean(stats.note)}"
    if stats.repeated:
        line += f"; {stats.flaky} of {stats.repeated} repeated case(s) flaky"
    return line


def render_summary(report: SuiteReport, colour: bool = False) -> str:
    t = report.totals
    line = f"  {t.passed}/{t.cases} cases passed"
    if not t.cases:  # an empty shard's: nothing passed, so it is not green
        line += "  (no case ran: a run of nothing is never green)"
    elif t.failed or t.errors or t.not_run:
        parts = [f"{t.failed} failed"] if t.failed else []
        parts += [f"{t.errors} run error(s)"] if t.errors else []
        parts += [f"{t.not_run} not run"] if t.not_run else []
        line += f"  ({', '.join(parts)})"
    else:
        line += "  " + _paint("✓", "32", colour)
    line += (
        f"  [{clean(report.kind)} suite, {clean(report.mode)}, agent {clean(report.agent)}: "
        f"exit {int(report.exit_code())}]"
    )
    if report.partial is not None:
        line += (
            f"\n  PARTIAL run ({clean(report.partial)}): this gate is not the suite's; "
            "run the whole suite (or merge every shard) for that"
        )
    statistics = _statistics(report)
    if statistics is not None:
        line += "\n" + statistics
    judge = report.judge_totals
    if judge is not None:
        line += "\n  " + judge.said()
    unused = report.unused_snapshots  # after a run of the whole suite
    if unused is not None:
        line += "".join(f"\n  {clean(said)}" for said in unused.lines())
    return f"\n{inert(line)}\n"


def render_table(report: SuiteReport, colour: bool = False) -> str:
    return (
        "\n"
        + "".join(render_case(c, colour) for c in report.cases)
        + render_summary(report, colour)
    )


class TableLines(HeldParts):
    """A case's lines rendered by its worker process (`harness.run.pool_worker.Prerender`)
    for an uncoloured table (`ColourLines`: a coloured one): the table counts them itself
    (the counter goes after the two spaces every case's first line starts with, which no
    workflow command can start or end at). Used only for the report they came with, when
    no detail of the case is folded into an earlier case's; else the case is rendered here."""

    # Each case's lines as its worker rendered them (uncoloured, uncounted), until the case
    # is told; a coloured table's too (`ColourLines` shares the store).
    _held: ClassVar[dict[int, tuple[Any, ...]]] = {}

    @staticmethod
    def render(case: CaseReport) -> str:
        return render_case(case)

    @classmethod
    def hold(cls, case: CaseReport, lines: object) -> None:
        cls._held[id(case)] = (case, cast(str, lines))

    @classmethod
    def take(cls, case: CaseReport) -> str | None:
        held = cls.held(case, take=True)
        return cast(str, held[0]) if held is not None else None


class ColourLines(TableLines):
    """`TableLines` of a coloured table (on a terminal)."""

    @staticmethod
    def render(case: CaseReport) -> str:
        return render_case(case, colour=True)


def holds(stream: TextIO) -> bool:
    """Whether `stream`'s lines may wait for the next ones: it writes to a descriptor that
    is not a terminal (a pipe, a file). Flushing one that is no descriptor's costs nothing."""
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return False
    return not stream.isatty()


class Held:
    """A stream whose writes are flushed together, at most `HOLD_SECS` after the first of
    them, by a thread of its own: each flush through a pipe is a system call, and wakes its
    reader, which cost about a tenth of a cheap case's CPU when made for every case. Its
    thread is started (`start`) before the run's cases: the watchdog reuses a case's task
    for the next only when no thread appeared while the case ran. A flush that failed is
    raised by the next write (or `close`), as the table's own flush raised it; a write that
    failed ends the thread too."""

    def __init__(self, stream: TextIO, pause: Callable[[], object] | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()  # the stream is not to be written and flushed at once
        self._due = threading.Event()  # something written is not flushed yet
        self._closed = threading.Event()
        # What the thread waits for once something is written (a test's: its own hook).
        self._pause = pause if pause is not None else self._hold
        self._failure: Exception | None = None
        self._thread = threading.Thread(target=self._flusher, name="zeroclaw-eval-table")
        self._thread.daemon = True  # never waited for as the process exits

    def _hold(self) -> None:
        self._closed.wait(HOLD_SECS)  # closing ends the wait

    def start(self) -> None:
        self._thread.start()

    def ended(self, timeout: float) -> bool:
        """Whether its thread (started) has ended, after `close` or a failed flush, waiting
        for it up to `timeout` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def write(self, text: str) -> None:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            try:
                self._stream.write(text)
            except BaseException:  # the table stops here: its thread has nothing to wait for
                self._end()
                raise
            if not self._due.is_set():
                self._due.set()

    def close(self, timeout: float | None = None) -> None:
        """Everything written flushed, by the thread as its last flush, waited for (up to
        `timeout` seconds: an interruption does not wait on a reader that stopped reading,
        whose full pipe holds the flush; the thread, a daemon, is left to it)."""
        self._end()
        self._thread.join(timeout)
        if self._failure is not None:
            raise self._failure

    def _end(self) -> None:
        self._closed.set()
        self._due.set()  # a thread waiting for a write wakes, to end

    def _flusher(self) -> None:
        while True:
            self._due.wait()
            if not self._closed.is_set():
                self._pause()
            with self._lock:
                self._due.clear()
                try:
                    self._stream.flush()
                except Exception as exc:  # raised where the table writes next
                    self._failure = exc
                    return
                if self._closed.is_set():
                    return


def _started(held: Held) -> bool:
    """Whether `held`'s thread started; a process out of threads shows each line as it is
    written instead."""
    try:
        held.start()
    except RuntimeError:  # "can't start new thread"
        return False
    return True


class TableReporter(Reporter):
    order = STDOUT
    whole_cases = False  # each case's line is written as it is done; then the totals

    def __init__(self, stream: TextIO, guard: bool = False, jobs: int | None = None) -> None:
        self._stream = stream
        self._colour = use_colour(stream)
        # Each case's lines its worker's, as this table renders them; a plain pass's alone.
        self.worker_parts = ColourLines if self._colour else TableLines
        self.takes_passes = True
        self._guard = guard  # on GitHub Actions, whose runner reads stdout for commands
        self._jobs = jobs or 1
        self._total = 0
        self._done = 0
        self._changes = Changes()
        # Through a pipe or into a file, the lines of cases held a moment (`Held`), until
        # every case is told; on a terminal, each case's shown as it is done.
        self._held = Held(stream) if holds(stream) else None

    def start(self, total: int) -> None:
        self._total = total
        held = self._held
        if held is not None and total and _started(held):
            held.write("\n")
        else:
            self._held = None
            self._stream.write("\n")

    def case_done(self, case: CaseReport) -> None:
        self._done += 1
        folded = self._changes.fold(case)
        taken = self.worker_parts.take(case)  # taken even when not used: it is let go now
        lines = None if folded else taken
        if lines is None:
            lines = render_case(case, self._colour, self._counter(), folded)
        else:
            lines = self._counted(lines)
        self._write(lines)
        if self._done >= self._total:
            self._told_all()

    def passes_done(self, passes: Passes) -> None:
        # A plain pass folds nothing (it has no failing check): each its worker's lines.
        chunks = cast("list[str]", passes.parts(self.worker_parts))
        done, total = self._done, self._total
        self._done += len(chunks)
        if self._counter():  # each counted on from here, as `_counted` counts one
            # A format spec given as a field is parsed again for every line: `rjust` is not.
            width, tail = len(str(total)), f"/{total}] "
            chunks = [
                f"{lines[:2]}[{str(count).rjust(width)}{tail}{lines[2:]}"
                for count, lines in zip(range(done + 1, self._done + 1), chunks, strict=True)
            ]
        if self._guard:  # a token of its own for each case's lines, as they are told
            for chunk in chunks:
                self._write(chunk)
        else:
            self._write("".join(chunks))
        if self._done >= self._total:
            self._told_all()

    def _told_all(self, timeout: float | None = None) -> None:
        """Every case's lines flushed, as the last is told: what the run does next (its
        reports written, other lines on this stream) may take a while, and is not to find
        a thread flushing this stream."""
        held, self._held = self._held, None
        if held is not None:
            held.close(timeout)

    def _counted(self, lines: str) -> str:
        """A case's lines as a worker rendered them, with the count in them (if any)."""
        counter = self._counter()
        return lines[:2] + counter + lines[2:] if counter else lines

    def _counter(self) -> str:
        # With one job and a short run, cases finish in fixture order and are few: the
        # lines read as they always have.
        if self._total < 2 or (self._jobs < 2 and self._total < COUNT_FROM):
            return ""
        width = len(str(self._total))
        return f"[{self._done:>{width}}/{self._total}] "

    def finish(self, report: SuiteReport) -> None:
        self._told_all()  # when a case was never told: the summary is written at once
        shared = self._changes.summary()
        if shared is not None:
            self._write(inert(f"\n  {shared}\n"))
        self._write(render_summary(report, self._colour))

    def abandon(self) -> None:
        # The lines written so far are out before the interruption is said; a reader that
        # stopped reading holds the flush, and the interruption is not kept waiting for it.
        self._told_all(ABANDON_SECS)

    def _write(self, text: str) -> None:
        if self._guard:
            # A token of its own for each chunk: none printed earlier can end this one.
            text = stop_commands(text, command_token())
        held = self._held
        if held is not None:
            held.write(text)
            return
        self._stream.write(text)
        self._stream.flush()


class _Spec:
    name = "table"
    options = ()
    stdout_format = "table"

    def build(self, output: Output) -> list[Reporter]:
        if output.stdout_format != self.stdout_format:
            return []
        # `--jobs` as given on the command line (a configured `jobs` is not among the
        # parsed options); from COUNT_FROM cases on, lines are counted anyway.
        jobs = output.values.get("jobs")
        return [
            TableReporter(
                output.out(),
                guard=output.github,
                jobs=jobs if isinstance(jobs, int) and not isinstance(jobs, bool) else None,
            )
        ]


REPORTER = _Spec()
