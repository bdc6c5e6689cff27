"""`harness.run.process_pool`'s plain passes: when every reporter that hears of cases writes
a plain pass from what its worker rendered (the command's table, JSON and JUnit reports,
last run), the workers send such a pass without its report, the harness decodes none of
them, and every report is the one a run sending every report writes (timings apart); a
case that kills its worker among them is still that case's run error alone."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import write_suite
from test_run_process_pool import hostile_agent, mixed_suite, says_hi, timeless

from harness import pipeline
from harness.reporters import json_report, junit, table
from harness.reporters.base import Commit, Output, Reporter
from harness.reporters.last_run import LAST_FOLDER, LAST_NAME
from harness.run import process_pool
from harness.verdict.reports import CaseReport, SuiteReport


class Decodes:
    """The reports the harness decodes, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = process_pool._decode

        def counting(payload: bytes) -> CaseReport:
            self.count += 1
            return real(payload)

        monkeypatch.setattr(process_pool, "_decode", counting)


class Listener(Reporter):
    """A reporter told every case whole, as the Python API's are: no pass comes without
    its report in a run that has one."""

    whole_cases = False

    def __init__(self) -> None:
        self.ids: list[str] = []

    def case_done(self, case: CaseReport) -> None:
        self.ids.append(case.id)


def the_command_s_reporters(out: Path) -> tuple[list[Reporter], io.StringIO]:
    stdout = io.StringIO()
    values: dict[str, Any] = {
        json_report.OPTION.dest: out / "report.json",
        junit.OPTION.dest: out / "report.xml",
        "jobs": 2,
    }
    output = Output(values, "table", stdout, io.StringIO(), environ={})
    built = [
        *table.REPORTER.build(output),
        *json_report.REPORTER.build(output),
        *junit.REPORTER.build(output),
    ]
    return [*built, Commit(output.files)], stdout


def run(suite: Path, work: Path, agent: str, *more: Reporter) -> tuple[SuiteReport, dict[str, Any]]:
    """A `--jobs 2` run with the command's reporters (and `more`) from `work`: its verdict,
    and what it wrote, timings and the transcripts file's name taken out."""
    work.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)  # where the last run is kept
        reporters, stdout = the_command_s_reporters(work)
        report = pipeline.run(
            pipeline.RunOptions(suite, agent, root=suite.parent, jobs=2),
            sorted([*reporters, *more], key=lambda r: r.order),
        )
    last = work / LAST_FOLDER / LAST_NAME
    named = json.loads(last.read_bytes())["transcripts"]
    lines = stdout.getvalue().splitlines()
    written = {
        "json": untimed((work / "report.json").read_text()),
        "junit": re.sub(r'time="[\d.]+"', 'time="0"', (work / "report.xml").read_text()),
        "last": untimed(last.read_text().replace(named, "TRANSCRIPTS")),
        "transcripts": sorted((work / LAST_FOLDER / named).read_text().splitlines()),
        # Cases finish in any order: each case's lines, and the counter counting on.
        "cases": sorted(re.sub(r"^  \[ *\d+/\d+\] ", "  ", line) for line in lines),
        "counted": [int(c) for c in re.findall(r"^  \[ *(\d+)/\d+\] ", "\n".join(lines), re.M)],
    }
    return report, written


def untimed(text: str) -> str:
    return re.sub(r'"duration_ms": [-+.\deE]+', '"duration_ms": 0', text)


def test_a_plain_pass_comes_without_its_report_and_every_report_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = mixed_suite(tmp_path / "suite")
    decodes = Decodes(monkeypatch)
    report, written = run(suite, tmp_path / "passes", "openai-agents")
    plain = [case for case in report.cases if case.passed]
    assert len(report.cases) == 16 and len(plain) == 8
    assert decodes.count == len(report.cases) - len(plain)  # the failures' reports only

    decodes.count = 0
    listener = Listener()
    whole, sent = run(suite, tmp_path / "reports", "openai-agents", listener)
    assert decodes.count == len(report.cases)  # told whole, each report came
    assert sorted(listener.ids) == sorted(case.id for case in report.cases)
    assert written == sent
    assert written["counted"] == list(range(1, 17))
    # Plain passes made again, the rest whole.
    assert [timeless(c) for c in report.cases] == [timeless(c) for c in whole.cases]
    assert report.totals == whole.totals and report.exit_code() == whole.exit_code() == 1


def test_a_case_that_kills_its_worker_among_plain_passes_is_its_own_run_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = hostile_agent(tmp_path, monkeypatch)
    cases: dict[str, Any] = {f"{n}.json": says_hi(f"case-{n}") for n in range(8)}
    cases["5.json"] = says_hi("case-5", "exit now")
    suite = write_suite(tmp_path / "suite", cases)
    decodes = Decodes(monkeypatch)
    report, written = run(suite, tmp_path / "work", agent)
    by_id = {case.id: case for case in report.cases}
    assert by_id["case-5"].error == "the worker running the case died (exit code 3)"
    assert all(by_id[f"case-{n}"].passed for n in range(8) if n != 5)
    assert decodes.count == 0  # the run error is made here; every pass came without a report
    document = json.loads(written["json"])
    assert [case["id"] for case in document["cases"]] == [f"case-{n}" for n in range(8)]
    assert (
        document["cases"][0]["record"] is not None
    )  # each pass written whole, as its worker had it
    assert len(written["transcripts"]) == 7 and written["counted"] == list(range(1, 9))


def test_passes_come_a_run_at_once_and_those_a_dying_worker_never_sent_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch's passes go as one message; the case that kills its worker in the middle of
    # a batch leaves those before it unsent, which the harness reads from the worker's spool.
    agent = hostile_agent(tmp_path, monkeypatch)
    cases: dict[str, Any] = {f"{n:02}.json": says_hi(f"case-{n}") for n in range(40)}
    cases["03.json"] = says_hi("case-3", "exit now")
    suite = write_suite(tmp_path / "suite", cases)
    handed: list[int] = []
    real = process_pool.WorkerPool._passes

    def counted(pool: process_pool.WorkerPool, passes: Any) -> None:
        handed.append(len(passes))
        real(pool, passes)

    monkeypatch.setattr(process_pool.WorkerPool, "_passes", counted)
    report, written = run(suite, tmp_path / "work", agent)
    by_id = {case.id: case for case in report.cases}
    assert by_id["case-3"].error == "the worker running the case died (exit code 3)"
    assert all(by_id[f"case-{n}"].passed for n in range(40) if n != 3)
    assert sum(handed) == 39 and len(handed) < 39  # runs of passes, not one a message
    document = json.loads(written["json"])
    assert [case["id"] for case in document["cases"]] == [f"case-{n}" for n in range(40)]
    assert len(written["transcripts"]) == 39 and written["counted"] == list(range(1, 41))


def test_a_pass_a_dying_worker_held_that_cannot_be_reported_runs_again_and_blames_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plain pass whose report does not read back (an own loop's message whose id is no
    # text), held in the spool of a worker a later case kills: it ended what was read of
    # the spool, and the case after it, not the killer, got the blame.
    agent = hostile_agent(tmp_path, monkeypatch)
    cases: dict[str, Any] = {f"{n:02}.json": says_hi(f"case-{n}") for n in range(40)}
    cases["01.json"] = says_hi("case-1", "unchecked odd id")
    cases["03.json"] = says_hi("case-3", "exit now")
    suite = write_suite(tmp_path / "suite", cases)
    requeued: list[list[int]] = []
    real = process_pool.WorkerPool._requeue

    def requeue(pool: process_pool.WorkerPool, places: list[int]) -> None:
        requeued.append(list(places))
        real(pool, places)

    monkeypatch.setattr(process_pool.WorkerPool, "_requeue", requeue)
    report, written = run(suite, tmp_path / "work", agent)
    by_id = {case.id: case for case in report.cases}
    assert by_id["case-3"].error == "the worker running the case died (exit code 3)"
    assert [case.id for case in report.cases if not case.passed] == ["case-3"]
    assert [1] in requeued  # the odd pass ran again, in another worker
    document = json.loads(written["json"])
    assert [case["id"] for case in document["cases"]] == [f"case-{n}" for n in range(40)]
    assert len(written["transcripts"]) == 39 and written["counted"] == list(range(1, 41))
