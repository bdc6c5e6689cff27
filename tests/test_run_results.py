"""`harness.run.results`: what a watched run keeps of its cases. A plain pass its `on_case`
slimmed is held as a byte and read back as that slim report; anything that could not be
made again from the case is kept as it was returned; a run through the pipeline whose
reporters stream still counts every pass it dropped and writes each one out whole."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from conftest import (
    BUILTIN_SURFACE,
    echo_fixture,
    failing_fixture,
    greeting_fixture,
    write_suite,
)

from harness import pipeline
from harness.agents.registry import resolve_agent
from harness.fixtures.suite import load_suite
from harness.reporters import json_report, junit
from harness.reporters.base import Commit, Output, Reporter
from harness.run.runner import CasePlan, replay_backend
from harness.run.watchdog import run_watched
from harness.verdict.kept import KeptCases
from harness.verdict.reports import CaseReport


def _suite(where: Path) -> Path:
    return write_suite(
        where,
        {
            "a_echo.json": echo_fixture("echo-case"),
            "b_bad.json": failing_fixture("bad-case"),
            "c_hi.json": greeting_fixture("hi-case"),
        },
    )


def _plan(root: Path) -> CasePlan:
    return CasePlan(resolve_agent("openai-agents"), "replay", replay_backend, None, 30.0, root)


def _slim(case: CaseReport, fixture: str | None = None) -> CaseReport | None:
    if not case.passed:
        return None
    shown = case.fixture if fixture is None else fixture
    return CaseReport(id=case.id, fixture=shown, passed=True, score=case.score)


def test_a_slimmed_pass_is_held_as_a_byte_and_read_back_as_slimmed(tmp_path: Path) -> None:
    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    told: list[CaseReport] = []

    def on_case(case: CaseReport) -> CaseReport | None:
        told.append(case)
        return _slim(case)

    reports = run_watched(cases, _plan(tmp_path), on_case)
    assert isinstance(reports, KeptCases) and reports.passes == 2
    whole = {case.id: case for case in told}
    assert list(reports) == [
        _slim(whole["echo-case"]),
        whole["bad-case"],
        _slim(whole["hi-case"]),
    ]
    assert whole["bad-case"].grades and whole["bad-case"].record is not None  # in full


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_cases_kept_whole_share_their_grades_strings(tmp_path: Path, jobs: int) -> None:
    """Two failing cases kept whole (in this process, or each sent whole by a worker) hold
    one copy of each string their grades repeat; a plain pass kept as a byte needs none."""
    suite = write_suite(
        tmp_path / "suite",
        {"a.json": failing_fixture("bad-a"), "b.json": failing_fixture("bad-b")},
    )
    cases = load_suite(suite, "replay", BUILTIN_SURFACE)
    plan = dataclasses.replace(_plan(tmp_path), jobs=jobs)
    first, second = run_watched(cases, plan, None)
    assert first.grades and len(first.grades) == len(second.grades)
    for one, other in zip(first.grades, second.grades, strict=True):
        assert (one.check, one.detail, one.field) == (other.check, other.detail, other.field)
        assert one.check is other.check and one.detail is other.detail
        assert one.field is other.field


def test_a_slimmer_report_that_cannot_be_made_again_is_kept_as_returned(tmp_path: Path) -> None:
    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    returned: list[CaseReport] = []

    def on_case(case: CaseReport) -> CaseReport | None:
        slim = _slim(case, fixture="elsewhere.json")  # not the fixture the case is shown at
        returned.extend([slim] if slim is not None else [])
        return slim

    reports = run_watched(cases, _plan(tmp_path), on_case)
    assert isinstance(reports, KeptCases) and reports.passes == 0
    assert [reports[0], reports[2]] == returned
    assert reports[0] is returned[0]


def test_a_streamed_run_counts_every_pass_it_dropped_and_writes_each_out_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = _suite(tmp_path / "suite")
    values = {
        json_report.OPTION.dest: tmp_path / "report.json",
        junit.OPTION.dest: tmp_path / "report.xml",
    }
    output = Output(values=values, stdout=None, stderr=sys.stderr, environ={})
    reporters: list[Reporter] = [
        *json_report.REPORTER.build(output),
        *junit.REPORTER.build(output),
        Commit(output.files),
    ]
    reporters.sort(key=lambda r: r.order)
    report = pipeline.run(pipeline.RunOptions(suite, root=tmp_path), reporters)

    assert isinstance(report.cases, KeptCases) and report.cases.passes == 2
    assert (report.totals.cases, report.totals.passed, report.totals.failed) == (3, 2, 1)
    written = json.loads((tmp_path / "report.json").read_bytes())
    assert [c["id"] for c in written["cases"]] == ["echo-case", "bad-case", "hi-case"]
    assert written["totals"]["passed"] == 2
    # A pass held as a byte is written out as it was when it was done: graded, in full.
    echo = written["cases"][0]
    assert echo["passed"] and echo["grades"] and echo["fixture_sha256"] is not None
    xml = (tmp_path / "report.xml").read_text("utf-8")
    assert 'tests="3"' in xml and 'name="echo-case[' in xml and 'name="hi-case[' in xml


@pytest.mark.parametrize("read", [True, False])
def test_reports_kept_whole_share_their_strings_only_when_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: bool
) -> None:
    # A worker's batch returns reports nobody reads (each went to the harness as it came
    # in): sharing their strings was a twentieth of what a worker spent on a plain case.
    from harness.run import results

    shared: list[int] = []
    monkeypatch.setattr(results, "share_strings", lambda grades: shared.append(len(grades)))
    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    reports = run_watched(cases, _plan(tmp_path), lambda case: None, read=read)
    assert [case.id for case in reports] == ["echo-case", "bad-case", "hi-case"]
    assert len(shared) == (3 if read else 0)


def test_a_run_s_reports_are_freed_once_let_go_not_left_to_the_collector(tmp_path: Path) -> None:
    # Its reports held a method of `Results`, which holds them: a cycle, so a worker's
    # batches piled up until the collector's full pass, which walked them all each time.
    import gc

    from harness.run.results import Results

    cases = load_suite(_suite(tmp_path / "suite"), "replay", BUILTIN_SURFACE)
    gc.collect()
    gc.disable()
    try:
        reports = run_watched(cases, _plan(tmp_path), lambda case: None, read=False)
        assert len(reports) == 3
        del reports
        gc.set_debug(gc.DEBUG_SAVEALL)  # what only the collector would have freed, kept
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage if isinstance(o, Results | KeptCases)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert cyclic == []
