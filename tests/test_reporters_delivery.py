"""`harness.reporters.delivery`: the reporters of one run are told the cases as kept in
suite order whatever order they finish in, the plain passes workers send without their
reports among them, those that follow on from what was told a batch at once; and a run's
workers send passes so only when every reporter that hears of cases takes them."""

from __future__ import annotations

import io

from conftest import failing_report, passing_report, suite_report

from harness.reporters.base import Reporter
from harness.reporters.delivery import Delivery, takes_passes
from harness.reporters.json_report import LastRun, WorkerParts
from harness.reporters.progress import ProgressReporter
from harness.reporters.table import TableLines, TableReporter
from harness.verdict.kept import Pass, Passes
from harness.verdict.reports import CaseReport


class Part:
    """A worker part of a case (`Prerender`): nothing held here."""

    @staticmethod
    def render(report: CaseReport) -> object:
        return f"part of {report.id}"

    @staticmethod
    def hold(report: CaseReport, parts: object) -> None:
        pass

    @staticmethod
    def drop(report: CaseReport) -> None:
        pass

    @staticmethod
    def release() -> None:
        pass


KINDS = (Part,)


class Heard(Reporter):
    """What it was told, in order: each case done or kept, each batch of passes."""

    takes_passes = True

    def __init__(self) -> None:
        self.done: list[str] = []
        self.kept: list[str | list[str]] = []

    def case_done(self, case: CaseReport) -> None:
        self.done.append(case.id)

    def passes_done(self, passes: Passes) -> None:
        self.done += passes.ids()

    def case_kept(self, case: CaseReport) -> None:
        self.kept.append(case.id)

    def passes_kept(self, passes: Passes) -> None:
        assert passes.parts(Part) == [f"part of {case_id}" for case_id in passes.ids()]
        self.kept.append(passes.ids())


def plain(place: int) -> Pass:
    return (place, f"c{place}", 1.0, (f"part of c{place}",))


def case(place: int) -> CaseReport:
    return failing_report(f"c{place}")


def test_passes_and_cases_are_kept_in_suite_order_passes_following_on_told_together() -> None:
    heard = Heard()
    delivery = Delivery([heard], [f"c{n}" for n in range(9)], KINDS)
    delivery.passes(Passes(KINDS, [plain(4), plain(5)]))  # the second worker's first
    delivery.passes(Passes(KINDS, [plain(0), plain(1)]))
    delivery.case_done(case(2))
    delivery.kept(case(2))
    delivery.passes(Passes(KINDS, [plain(6), plain(8)]))  # not one after another
    delivery.passes(Passes(KINDS, [plain(3)]))
    delivery.passes(Passes(KINDS, [plain(7)]))
    assert heard.done == ["c4", "c5", "c0", "c1", "c2", "c6", "c8", "c3", "c7"]
    assert heard.kept == [["c0", "c1"], "c2", ["c3", "c4", "c5", "c6"], ["c7", "c8"]]


def test_without_an_order_passes_are_kept_as_they_come() -> None:
    heard = Heard()
    delivery = Delivery([heard], [], KINDS)
    delivery.passes(Passes(KINDS, [plain(3), plain(1)]))
    assert heard.kept == [["c3", "c1"]]


def test_a_pass_never_followed_on_from_is_told_at_the_end_in_suite_order() -> None:
    heard = Heard()
    delivery = Delivery([heard], [f"c{n}" for n in range(5)], KINDS)
    delivery.passes(Passes(KINDS, [plain(4)]))
    delivery.passes(Passes(KINDS, [plain(2)]))
    delivery.kept(case(3))
    delivery.finish(suite_report("regression", passing_report()))
    assert heard.kept == [["c2"], ["c4"], "c3"]


def test_workers_send_passes_only_when_every_reporter_told_of_cases_takes_them() -> None:
    stream = io.StringIO()  # not a terminal: the table's lines are its workers'
    last = LastRun(io.StringIO())
    table = TableReporter(stream, jobs=2)
    kinds = (WorkerParts, TableLines)
    assert takes_passes([table, last, ProgressReporter(stream)], kinds)
    assert takes_passes([Reporter()], ())  # told of no case
    assert not takes_passes([table, last], (TableLines,))  # the last run's part not rendered
    assert not takes_passes([table, Heard(), _Whole()], kinds)


class _Whole(Reporter):
    """A reporter told each case whole (the Python API's)."""

    def case_done(self, case: CaseReport) -> None:
        pass


def test_a_subclass_that_hears_cases_its_own_way_is_sent_every_case_whole() -> None:
    # It inherits `takes_passes` and the batch hooks, but its `case_done` is its own: plain
    # passes sent as parts would go to the inherited batch hook, and it would hear none.
    class Counting(ProgressReporter):
        def case_done(self, case: CaseReport) -> None:
            super().case_done(case)

    assert takes_passes([ProgressReporter(io.StringIO())], ())
    assert not takes_passes([Counting(io.StringIO())], ())
