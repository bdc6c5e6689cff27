"""The reporters of one run, told each step (`Delivery`): a stream that cannot be written
stops its reporter only; the cases as the verdict keeps them told in suite order, whatever
order they finish in; the plain passes workers sent without their reports told a batch at
once to the reporters that take them (`Reporter.takes_passes`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness.io.atomic import ReportWriteError
from harness.reporters.base import Reporter
from harness.verdict.kept import Passes

if TYPE_CHECKING:
    from harness.verdict.reports import CaseReport, SuiteReport

Hooks = list[tuple[int, Callable[[Any], None]]]


def _hooks(reporters: Sequence[Reporter], nothing: Callable[[Reporter, Any], None]) -> Hooks:
    """Each reporter's hook of `nothing`'s name (by its place), unless it is `nothing`."""
    found = []
    for index, reporter in enumerate(reporters):
        hook = getattr(reporter, nothing.__name__)
        if getattr(hook, "__func__", None) is not nothing:
            found.append((index, hook))
    return found


def takes_passes(reporters: Sequence[Reporter], kinds: Sequence[object]) -> bool:
    """Whether every reporter that hears of cases (`case_done`, `case_kept`) takes plain
    passes a batch at once, its worker part (if it has one) among `kinds`: then a run's
    workers may send a plain pass without its report."""
    told = {index for index, _ in _hooks(reporters, Reporter.case_done)}
    told |= {index for index, _ in _hooks(reporters, Reporter.case_kept)}
    return all(
        reporters[index].takes_passes
        and (reporters[index].worker_parts is None or reporters[index].worker_parts in kinds)
        and _passes_follow(reporters[index])
        for index in told
    )


def _passes_follow(reporter: Reporter) -> bool:
    """Whether its hooks for a batch of passes are as derived as its hooks for a case: a
    subclass that changed what it does with a case, and not with passes, hears each case."""
    return all(
        issubclass(_defined_by(reporter, batch), _defined_by(reporter, one))
        for one, batch in (("case_done", "passes_done"), ("case_kept", "passes_kept"))
    )


def _defined_by(reporter: Reporter, name: str) -> type:
    return next(k for k in type(reporter).__mro__ if name in vars(k))


def stream_failure(exc: OSError | ValueError) -> str:
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"an output stream could not be written ({why}); the other reports were written"


class Delivery:
    """The reporters of one run. A stream that cannot be written (a closed pipe, a full
    disk) stops that reporter only: the run goes on, the other reports are written, and
    every failure is raised, together, once all have finished."""

    def __init__(
        self,
        reporters: Sequence[Reporter],
        order: Sequence[str] = (),
        prerender: Sequence[Any] = (),  # `harness.run.pool_worker.Prerender`s
    ) -> None:
        self._reporters = reporters
        # What workers render of each case (a pass's parts, in this order); each case let go
        # of once all are told it: one off or broken takes nothing.
        self.kinds = prerender
        self._broken: dict[int, str] = {}
        # The case ids in suite order (each once), for `kept` to tell cases in it, whatever
        # order they finish in (several jobs); none: as they come.
        self._order = order
        self._next = 0
        # What waits for a case before it: cases by their ids, plain passes in runs
        # (`Passes`) by their first one's place.
        self._waiting: dict[str, CaseReport] = {}
        self._runs: dict[int, Passes] = {}
        # The hooks told of every case, of the reporters that have them (the protocol's
        # own does nothing): thousands of cases each call only those.
        self._done = _hooks(reporters, Reporter.case_done)
        self._kept = _hooks(reporters, Reporter.case_kept)
        self._passes_done = _hooks(reporters, Reporter.passes_done)
        self._passes_kept = _hooks(reporters, Reporter.passes_kept)

    def _each_case(self, hooks: Hooks, case: CaseReport | Passes) -> None:
        broken = self._broken
        for index, hook in hooks:
            if index in broken:
                continue
            try:
                hook(case)
            except (OSError, ValueError) as exc:
                broken[index] = stream_failure(exc)

    def _each(self, call: Callable[[Reporter], None]) -> None:
        for index, reporter in enumerate(self._reporters):
            if index in self._broken:
                continue
            try:
                call(reporter)
            except (OSError, ValueError) as exc:
                self._broken[index] = stream_failure(exc)

    def named(self, suite: str, agent: str) -> None:
        self._each(lambda reporter: reporter.named(suite, agent))

    def start(self, total: int) -> None:
        self._each(lambda reporter: reporter.start(total))

    def case_done(self, case: CaseReport) -> None:
        self._each_case(self._done, case)

    def kept(self, case: CaseReport) -> None:
        """`case` as the verdict keeps it, told in suite order once the cases before it
        are (the reports holding every case write it out)."""
        if not self._order:
            self._tell_kept(case)
            return
        self._waiting[case.id] = case
        self._release()

    def passes(self, passes: Passes) -> None:
        """Plain passes done (`Passes`): told done at once, then as kept in suite order,
        those that follow on from the cases told so far together."""
        self._each_case(self._passes_done, passes)
        if not self._order:
            self._each_case(self._passes_kept, passes)
            return
        # A pass's place is its place in the order: a worker's passes, one after another
        # in the suite, wait as one run under the first one's.
        runs = self._runs
        for run in passes.runs():
            runs[run.places[0]] = run
        self._release()

    def _release(self) -> None:
        """What waits and follows on from the cases told, told in order: plain passes one
        after another a batch at once."""
        order, waiting, runs, at = self._order, self._waiting, self._runs, self._next
        told: list[Passes] = []
        begun = at
        while True:
            run = runs.pop(at, None)
            if run is not None:
                told.append(run)
                at += len(run)
                continue
            case = waiting.pop(order[at], None) if at < len(order) else None
            if case is None:
                break
            if told:
                self._tell_passes(told, begun, at)
                told = []
            at += 1
            begun = self._next = at
            self._tell_kept(case)
        self._next = at
        if told:
            self._tell_passes(told, begun, at)

    def _tell_passes(self, runs: list[Passes], begun: int, end: int) -> None:
        """The runs from `begun` to `end` (one after another), named from the order."""
        self._each_case(self._passes_kept, Passes.joined(runs, self._order[begun:end]))

    def _unordered(self) -> None:
        """Any case still waiting for one before it (a case the run never told) is told
        now: a report that finds its cases not the verdict's renders it whole instead."""
        runs, self._runs = self._runs, {}
        for place in sorted(runs):
            run = runs[place]
            self._tell_passes([run], place, place + len(run))
        waiting, self._waiting = self._waiting, {}
        for case in waiting.values():
            self._tell_kept(case)

    def _tell_kept(self, case: CaseReport) -> None:
        self._each_case(self._kept, case)
        for each in self.kinds:
            each.drop(case)

    def finish(self, report: SuiteReport) -> None:
        """Every reporter's `finish`; a report that cannot be written does not keep the
        others from being written, and is raised (all of them) at the end."""
        self._unordered()
        failures: list[str] = []
        for index, reporter in enumerate(self._reporters):
            if index in self._broken:
                failures.append(self._broken[index])
                continue
            try:
                reporter.finish(report)
            except ReportWriteError as exc:
                failures.append(str(exc))
            except (OSError, ValueError) as exc:  # a stream reporter's closed pipe, full disk
                failures.append(stream_failure(exc))
        if failures:
            raise ReportWriteError("\n".join(failures))

    def abandon(self) -> None:
        for reporter in self._reporters:
            with contextlib.suppress(Exception):
                reporter.abandon()
