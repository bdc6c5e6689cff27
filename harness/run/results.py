"""What a watched run keeps of its cases as they come in (`Results`): each case's runs, a
case reported once its last run is in (in fixture order under `--maxfail`), and the verdict's
reports, a plain pass held as a byte (`harness.verdict.kept`) so that a long run holds no
report per passing case."""

from __future__ import annotations

import array
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from harness.expectations.base import Grade
from harness.fixtures.suite import AdmittedCases, Case, FixtureChanged, display_path, id_at
from harness.run.progress import internal_error
from harness.run.repeats import combine, runs_of
from harness.run.runner import CasePlan, sealed
from harness.verdict.kept import SCORES, KeptCases, Passes
from harness.verdict.reports import CaseReport, share_strings

# Hears each case as it is done; what it returns (a slimmer report) the run keeps in the
# case's place, None: the case as it is.
OnCase = Callable[[CaseReport], "CaseReport | None"]
# Hears the plain passes workers sent without their reports (`Passes`), a batch at once.
OnPasses = Callable[[Passes], None]


class Unit(msgspec.Struct, frozen=True):
    """One run of one case: the case's place in the suite, and which repetition."""

    index: int
    run: int


class _Begun:
    """The cases begun, a byte each (a set of their places would hold an entry and an int
    for each): `add` and `in`, as a set of places."""

    __slots__ = ("_flags",)

    def __init__(self, count: int) -> None:
        self._flags = bytearray(count)

    def add(self, index: int) -> None:
        self._flags[index] = 1

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and 0 <= index < len(self._flags) and self._flags[index] == 1


_NO_GRADES: list[Grade] = []  # shared by every plain pass made again: read-only, as reports are


class _PlainPasses:
    """The report of the plain pass at a place, made again (`KeptCases`' maker), as
    `on_case` slimmed it: a suite's case is not made to say its id and fixture (a verdict's
    reader makes thousands). Apart from the `Results` whose reports hold it: through a
    method of theirs, the reports would hold them, and a run's be freed only by the
    collector's full pass (a worker's batches piled up until one, and each was walked)."""

    __slots__ = ("_cases", "_root")

    def __init__(self, cases: Sequence[Case], root: Path) -> None:
        self._cases, self._root = cases, root

    def __call__(self, index: int, score: float | None) -> CaseReport:
        return CaseReport(
            id=self.id(index),
            fixture=self.shown(index),
            passed=True,
            score=score,
            grades=_NO_GRADES,
        )

    def id(self, index: int) -> str:
        return id_at(self._cases, index)

    def shown(self, index: int, case: Case | None = None) -> str:
        """The fixture of the case at `index` (`case`, when at hand) as reports show it:
        an admitted suite's folder worked out once, not each case's path again."""
        cases, root = self._cases, self._root
        if isinstance(cases, AdmittedCases):
            return cases.shown_at(index, root)
        return display_path((case or cases[index]).where, root)


class Results:
    """Each case's runs as they come in, from any worker; a case is reported (`on_case`)
    once its last run is in. Under `--maxfail` cases are reported in fixture order, as a
    serial run reports them: one that ran beside the failure that stopped the run but
    comes after it is reported as not run, as it is in a serial run, which never ran it
    (cases go out in fixture order, so every case before that failure ran).

    What it keeps of a case done is what `on_case` returns for it: a plain pass slimmed
    to its id, fixture and score is held as a byte (`KeptCases`) and made again when the
    verdict is read, so a long run holds no report per passing case."""

    def __init__(
        self,
        cases: Sequence[Case],
        plan: CasePlan,
        on_case: OnCase | None,
        on_passes: OnPasses | None = None,
        read: bool = True,
    ) -> None:
        self._cases = cases
        # Whether the reports are read once the run is over: a worker's batch's never are
        # (each went to the harness as it came in), and theirs share no strings.
        self._read = read
        self._on_case = on_case
        self._on_passes = on_passes
        self._plan = plan
        # The runs of each case: one each in replay (whose fixture need not be read again
        # to say so), held as one number rather than a list of them.
        self.runs = (
            array.array("I", [1]) * len(cases)
            if plan.mode == "replay"
            else array.array("I", (runs_of(case, plan.mode, plan.repeat) for case in cases))
        )
        # The runs in of each case not complete yet (a complete case's are in `reports`).
        self._partial: dict[int, dict[int, CaseReport]] = {}
        self._made = made = _PlainPasses(cases, plan.root)
        # A pass's id read straight from an admitted suite: a verdict's reader asks each.
        named = cases.id_of if isinstance(cases, AdmittedCases) else made.id
        every = cases.ids if isinstance(cases, AdmittedCases) else None
        self.reports: KeptCases[CaseReport] = KeptCases(len(cases), made, named, every)
        self.failed = 0
        # The cases begun, by any event loop: one in flight beside a run that blocked its
        # loop is begun again on the next, even once the run is stopping.
        self.started = _Begun(len(cases))
        self._lock = threading.Lock()
        # Under --maxfail: the cases reported so far (a prefix, in fixture order), the
        # failures among them, and the lock that keeps the reporting in that order.
        self._told = 0
        self._told_failed = 0
        self._telling = threading.Lock()

    def shown(self, index: int, case: Case | None = None) -> str:
        return self._made.shown(index, case)

    def units(self) -> list[Unit]:
        return [Unit(i, r) for i, n in enumerate(self.runs) for r in range(n)]

    def has(self, unit: Unit) -> bool:
        return self.reports.has(unit.index) or unit.run in self._partial.get(unit.index, ())

    @property
    def stopping(self) -> bool:
        """Enough cases failed (`--maxfail`): no new case starts."""
        maxfail = self._plan.maxfail
        return maxfail is not None and self.failed >= maxfail

    def add(self, unit: Unit, report: CaseReport, case: Case | None = None) -> None:
        """`report` of `unit` is in; `case`: the unit's case, when the caller has it at hand
        (an admitted suite makes a case each time one is read from it)."""
        with self._telling:
            self._tell(self._added(unit, report, case))

    def _added(
        self, unit: Unit, report: CaseReport, of: Case | None
    ) -> list[tuple[int, CaseReport]]:
        """What is to be reported now that `report` is in."""
        with self._lock:
            if self.has(unit):  # also run again after an abandoned worker: the first counts
                return []
            if of is None:
                of = self._cases[unit.index]
            if self._plan.mode == "replay" and self.runs[unit.index] == 1:
                # One run of a replay case is its report (replay has no clusters): its
                # trace, dropped since admission, is not parsed again to say so.
                whole = report
            else:
                runs = self._partial.setdefault(unit.index, {})
                runs[unit.run] = report
                if len(runs) < self.runs[unit.index]:
                    return []
                del self._partial[unit.index]
                try:
                    whole = combine(of, [runs[r] for r in sorted(runs)])
                except FixtureChanged as exc:  # its cluster could not be read again
                    whole = internal_error(of, runs[0].fixture, exc)
            case = sealed(whole, of, self._plan)
            self.reports.keep(unit.index, case)
            self.failed += not case.passed
            return [(unit.index, case)] if self._plan.maxfail is None else self._in_order()

    def passes(self, passes: Passes) -> None:
        """Plain passes a worker sent without their reports (`Passes`: only a run with
        `on_passes` and no `--maxfail` asks for them), in the order they were done: each
        held as a byte, as `on_case` would have had it held (a run of them at once), and
        the batch told to `on_passes` (those in already left out: the first counts). A pass
        is made again from the suite, its id and fixture: its worker named the case at its
        place as this process does (`shown`: the same path, from the same root)."""
        assert self._on_passes is not None and self._plan.maxfail is None
        with self._telling:
            with self._lock:
                reports = self.reports
                places = passes.places
                if not (isinstance(places, range) and reports.drop_run(places.start, passes.codes)):
                    passes = self._kept(passes)
            if len(passes):
                self._on_passes(passes)

    def _kept(self, passes: Passes) -> Passes:
        """Those of `passes` not in yet, each held as a byte."""
        reports = self.reports
        fresh = [at for at, index in enumerate(passes.places) if not reports.has(index)]
        if len(fresh) < len(passes):
            passes = passes.picked(fresh) if fresh else Passes(passes.kinds, [])
        for index, score in zip(passes.places, passes.scores(), strict=True):
            if not reports.drop(index, score):  # a score no byte stands for
                reports.keep(index, self._made(index, score))
        return passes

    def _in_order(self) -> list[tuple[int, CaseReport]]:
        """The cases after those reported so far that are in, in fixture order; those past
        the failure that stopped the run as not run."""
        maxfail = self._plan.maxfail
        assert maxfail is not None
        ready = []
        while self._told < len(self._cases) and self.reports.has(self._told):
            index = self._told
            if self._told_failed >= maxfail:
                self.reports.keep(index, self._unrun(index))
            told = self.reports[index]
            self._told_failed += not told.passed and told.not_run is None
            ready.append((index, told))
            self._told += 1
        return ready

    def _unrun(self, index: int) -> CaseReport:
        case = self._cases[index]
        reason = f"the run stopped after {self._plan.maxfail} failing case(s) (--maxfail)"
        return sealed(
            CaseReport.unrun(case.id, display_path(case.where, self._plan.root), reason),
            case,
            self._plan,
        )

    def finish(self) -> Sequence[CaseReport]:
        """Every case's report, in fixture order: those that never started (the run
        stopped early) as not run."""
        with self._telling:
            with self._lock:
                reports = self.reports
                missing = range(len(self._cases)) if reports.missing() else ()
                unrun = [i for i in missing if not reports.has(i)]
                for index in unrun:
                    self.reports.keep(index, self._unrun(index))
                ordered = self._plan.maxfail is not None
                ready = self._in_order() if ordered else [(i, self.reports[i]) for i in unrun]
            self._tell(ready)
        return self.reports

    def _tell(self, reports: list[tuple[int, CaseReport]]) -> None:
        on_case = self._on_case
        for index, report in reports:
            kept = None if on_case is None else on_case(report)
            if kept is not None:
                self._keep(index, kept)
            elif self._read:  # kept whole, as it is
                share_strings(report.grades)

    def _keep(self, index: int, kept: CaseReport) -> None:
        """Hold `kept` (`on_case`'s slimmer report) as the case at `index`: as a byte when
        it is a plain pass that can be made again exactly (`_PlainPasses`), else whole."""
        if kept.passed and kept.score in SCORES and kept == self._made(index, kept.score):
            self.reports.drop(index, kept.score)
        else:
            share_strings(kept.grades)
            self.reports.keep(index, kept)
