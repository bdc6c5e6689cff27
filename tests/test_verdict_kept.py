"""`harness.verdict.kept`: a verdict's cases with each plain pass held as a byte, read back
as the reports a run keeping them whole gives, and every figure of the verdict the same."""

from __future__ import annotations

import msgspec
import pytest
from conftest import errored_report, failing_report, passing_report, suite_report

from harness.verdict.kept import SCORES, KeptCases, Passes, plain_passes
from harness.verdict.reports import CaseReport, SuiteReport


def _slim(case: CaseReport) -> CaseReport:
    """A pass as a run keeps it once its reports have it: id, fixture and score."""
    return CaseReport(id=case.id, fixture=case.fixture, passed=True, score=case.score)


def _kept(reports: list[CaseReport]) -> KeptCases[CaseReport]:
    """`reports` held as a run holds them: each plain pass as a byte."""
    slim = {i: _slim(r) for i, r in enumerate(reports) if r.passed}

    def remake(index: int, score: float | None) -> CaseReport:
        made = slim[index]
        return CaseReport(id=made.id, fixture=made.fixture, passed=True, score=score)

    kept: KeptCases[CaseReport] = KeptCases(len(reports), remake)
    for index, report in enumerate(reports):
        if index in slim:
            assert kept.drop(index, report.score)
        else:
            kept.keep(index, report)
    return kept


def _mixed() -> list[CaseReport]:
    return [
        passing_report("a"),
        failing_report("b"),
        passing_report("c"),
        errored_report("d"),
        passing_report("e"),
        CaseReport.unrun("f", "evals/regression/f.json", "stopped"),
    ]


def test_a_kept_verdict_reads_back_the_reports_a_slimming_run_keeps() -> None:
    reports = _mixed()
    kept = _kept(reports)
    expected = [_slim(r) if r.passed else r for r in reports]
    assert kept.passes == 3
    assert list(kept) == expected
    assert kept == expected and len(kept) == 6
    assert [kept[i] for i in range(6)] == expected
    assert kept[-1] == expected[-1] and kept[1:3] == expected[1:3]
    assert list(kept.whole()) == [r for r in reports if not r.passed]
    with pytest.raises(IndexError):
        kept[6]


def test_every_figure_of_a_kept_verdict_is_the_whole_verdicts() -> None:
    reports = _mixed()
    slimmed = [_slim(r) if r.passed else r for r in reports]
    for kind in ("regression", "capability"):
        listed = suite_report(kind, *slimmed)
        held = msgspec.structs.replace(listed, cases=_kept(reports))
        assert held.totals == listed.totals
        assert held.statistics == listed.statistics
        assert held.exit_code() == listed.exit_code()
        assert held.all_passed == listed.all_passed
        assert held.worst_first() == listed.worst_first()
        assert held.judge_totals == listed.judge_totals


def test_a_verdict_of_plain_passes_alone_still_passes_and_counts_them() -> None:
    reports = [passing_report("a"), passing_report("b")]
    held = msgspec.structs.replace(suite_report("regression"), cases=_kept(reports))
    assert held.totals.cases == held.totals.passed == 2
    assert held.all_passed and int(held.exit_code()) == 0
    assert held.statistics.pass_rate == 1.0 and held.statistics.cases == 2
    assert plain_passes(held.cases)[1] == 2


def test_a_case_kept_whole_after_a_pass_no_longer_counts_as_one() -> None:
    kept = _kept([passing_report("a"), passing_report("b")])
    assert kept.passes == 2
    failed = failing_report("a")
    kept.keep(0, failed)
    assert kept.passes == 1 and kept[0] is failed
    assert kept.drop(0, 1.0) and kept.passes == 2
    assert kept.drop(0, 1.0) and kept.passes == 2  # the same case twice counts once


def test_a_score_no_byte_stands_for_is_not_dropped() -> None:
    kept: KeptCases[CaseReport] = KeptCases(1, lambda i, s: passing_report())
    assert not kept.has(0)
    assert not kept.drop(0, 0.5)
    assert not kept.has(0) and kept.passes == 0
    with pytest.raises(IndexError, match="not in yet"):
        list(kept)


def test_a_plain_pass_is_made_again_each_time_it_is_read() -> None:
    made: list[int] = []

    def remake(index: int, score: float | None) -> CaseReport:
        made.append(index)
        return CaseReport(id=f"c{index}", fixture=f"c{index}.json", passed=True, score=score)

    kept: KeptCases[CaseReport] = KeptCases(2, remake)
    kept.drop(0, None)
    kept.drop(1, 1.0)
    assert [(c.id, c.score) for c in kept] == [("c0", None), ("c1", 1.0)]
    assert [(c.id, c.score) for c in kept] == [("c0", None), ("c1", 1.0)]
    assert made == [0, 1, 0, 1]


def test_a_listed_verdict_is_all_whole() -> None:
    report: SuiteReport = suite_report("regression", passing_report("a"))
    whole, passes = plain_passes(report.cases)
    assert list(whole) == report.cases and passes == 0


def test_a_kept_verdict_says_its_cases_ids_without_making_a_pass_again() -> None:
    reports = _mixed()
    slim = _kept(reports)

    def unmade(index: int, score: float | None) -> CaseReport:
        raise AssertionError("a plain pass was made again")

    kept: KeptCases[CaseReport] = KeptCases(len(reports), unmade, lambda i: reports[i].id)
    for index in range(len(reports)):
        if reports[index].passed:
            kept.drop(index, reports[index].score)
        else:
            kept.keep(index, reports[index])
    ids = [report.id for report in reports]
    assert list(kept.ids(lambda case: case.id)) == ids
    assert list(slim.ids(lambda case: case.id)) == ids  # no `named`: each made again


def test_a_run_of_plain_passes_is_held_at_once_unless_one_of_them_is_in() -> None:
    made = [passing_report(f"p{n}") for n in range(5)]

    def remake(index: int, score: float | None) -> CaseReport:
        return msgspec.structs.replace(_slim(made[index]), score=score)

    kept: KeptCases[CaseReport] = KeptCases(5, remake)
    assert kept.missing() == 5
    kept.keep(4, made[4])
    assert not kept.drop_run(3, bytes([SCORES[1.0]] * 2))  # the case at 4 is in
    assert not kept.has(3) and kept.passes == 0 and kept.missing() == 4
    assert kept.drop_run(0, bytes([SCORES[1.0], SCORES[None], SCORES[1.0]]))
    assert kept.passes == 3 and [kept.has(n) for n in range(5)] == [True, True, True, False, True]
    assert kept.missing() == 1
    kept.drop(3, 1.0)
    assert kept.missing() == 0
    assert kept[1].score is None and kept[0] == _slim(made[0])


def test_passes_held_as_columns_read_as_the_entries_they_were_made_of() -> None:
    entries = [
        (n, f"p{n}", 1.0 if n != 3 else None, (f"line {n}", f"part {n}")) for n in (1, 2, 3, 6)
    ]
    kinds = ("lines", "parts")
    passes = Passes(kinds, entries)
    assert len(passes) == 4 and passes.ids() == ["p1", "p2", "p3", "p6"]
    assert passes.parts("parts") == ["part 1", "part 2", "part 3", "part 6"]
    assert passes.scores() == [1.0, 1.0, None, 1.0]
    runs = passes.runs()  # one after another in the suite
    assert [list(run.places) for run in runs] == [[1, 2, 3], [6]]
    assert [run.parts("lines") for run in runs] == [["line 1", "line 2", "line 3"], ["line 6"]]
    picked = passes.picked([0, 3])
    assert list(picked.places) == [1, 6] and picked.ids() == ["p1", "p6"]
    with pytest.raises(ValueError):
        passes.parts("neither")


def test_runs_one_after_another_join_as_one_named_from_the_suite() -> None:
    kinds = ("parts",)
    ones = Passes.run(kinds, 2, bytes([SCORES[1.0]] * 2), [["part 2", "part 3"]])
    more = Passes.run(kinds, 4, bytes([SCORES[None]]), [["part 4"]])
    with pytest.raises(ValueError):
        ones.ids()  # a worker's run is named by the suite, not by its worker
    suite = [f"c{n}" for n in range(6)]
    joined = Passes.joined([ones, more], suite[2:5])
    assert joined.places == range(2, 5) and joined.ids() == ["c2", "c3", "c4"]
    assert joined.parts("parts") == ["part 2", "part 3", "part 4"]
    assert joined.scores() == [1.0, 1.0, None]
    assert ones.parts("parts") == ["part 2", "part 3"]  # the runs joined are as they were
    more.named(suite)
    assert more.ids() == ["c4"]


def test_every_id_at_once_is_each_id_read_one_by_one() -> None:
    made = [passing_report(f"p{n}") for n in range(6)]
    every = [f"p{n}" for n in range(6)]

    def remake(index: int, score: float | None) -> CaseReport:
        return msgspec.structs.replace(_slim(made[index]), score=score)

    def id_of(report: CaseReport) -> str:
        return report.id

    asked: list[int] = []

    def ids() -> list[str]:
        asked.append(1)
        return list(every)

    kept: KeptCases[CaseReport] = KeptCases(6, remake, every.__getitem__, ids)
    kept.keep(0, msgspec.structs.replace(made[0], id="whole first"))
    assert kept.drop_run(1, bytes([SCORES[1.0]] * 3))
    with pytest.raises(IndexError):  # a case not in yet, as `ids` says
        kept.all_ids(id_of)
    kept.keep(5, msgspec.structs.replace(made[5], id="whole last"))
    kept.drop(4, None)
    assert (
        kept.all_ids(id_of)
        == list(kept.ids(id_of))
        == ["whole first", "p1", "p2", "p3", "p4", "whole last"]
    )
    assert asked == [1]  # once, not a case at a time
    plain: KeptCases[CaseReport] = KeptCases(2, remake)  # no ids at hand: made again
    plain.drop_run(0, bytes([SCORES[1.0]] * 2))
    assert plain.all_ids(id_of) == ["p0", "p1"]
