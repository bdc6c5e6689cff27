"""`harness.reporters.last_run` and the JSON reporter's `LastRun`: the last run kept for `show`, its
report and every passing case's transcript, written out as each case is done and never held
by the run; one run's state at a time, an interrupted run leaving the previous one; a bad
state said, never a traceback."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from conftest import Cli, echo_fixture, failing_fixture, green_project, project, write_suite

from harness.pipeline import RunOptions, run
from harness.reporters.base import FILES, Reporter
from harness.reporters.json_report import LastRun
from harness.reporters.last_run import LAST_FOLDER
from harness.verdict.reports import CaseReport, SuiteReport


class Held(Reporter):
    """Counts, as each case is told, how many passing transcripts the run holds."""

    def __init__(self) -> None:
        self.told: list[CaseReport] = []
        self.most_held = 0
        self.told_with_transcript = 0

    def case_done(self, case: CaseReport) -> None:
        record = case.record
        self.told_with_transcript += record is not None and record.transcript is not None
        self.told.append(case)
        held = sum(
            c.passed and c.record is not None and bool(c.record.transcript) for c in self.told
        )
        self.most_held = max(self.most_held, held)


def suite_of(root: Path, passing: int) -> Path:
    fixtures = {f"p{n:02}.json": echo_fixture(f"pass-{n:02}") for n in range(passing)}
    fixtures["zz.json"] = failing_fixture("fails")
    return write_suite(root / "evals" / "regression", fixtures)


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_run_holds_no_passing_transcript_once_it_is_written_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = suite_of(tmp_path, 12)
    held = Held()
    # The probe is told after the state's reporter: what it sees is what the run goes on
    # holding once that reporter has written the transcript out.
    report = run(RunOptions(suite, root=tmp_path, jobs=jobs), [LastRun(io.StringIO()), held])
    assert held.told_with_transcript == 13  # each was told with its transcript, built...
    assert held.most_held <= 1  # ...and none held on to: memory flat over the passes
    passing = [c for c in report.cases if c.passed]
    assert len(passing) == 12 and all(c.record and c.record.transcript is None for c in passing)
    (fails,) = [c for c in report.cases if not c.passed]
    assert fails.record is not None and fails.record.transcript  # a failure keeps its own
    (kept,) = (tmp_path / LAST_FOLDER).glob("transcripts-*.jsonl")
    lines = [json.loads(line) for line in kept.read_text("utf-8").splitlines()]
    assert sorted(line["id"] for line in lines) == [f"pass-{n:02}" for n in range(12)]
    assert all(line["transcript"][0]["sent"][0]["role"] == "user" for line in lines)
    document = json.loads((tmp_path / LAST_FOLDER / "last-report.json").read_text("utf-8"))
    assert document["transcripts"] == kept.name


class Interrupting(Reporter):
    order = FILES  # finishes before the state is put in place

    def finish(self, report: SuiteReport) -> None:
        raise KeyboardInterrupt


def test_an_interrupted_run_leaves_the_previous_state_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = suite_of(tmp_path, 2)
    run(RunOptions(suite, root=tmp_path), [LastRun(io.StringIO())])
    folder = tmp_path / LAST_FOLDER
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    write_suite(suite, {"p00.json": echo_fixture("pass-00", "changed")})
    reporters = sorted([LastRun(io.StringIO()), Interrupting()], key=lambda r: r.order)
    with pytest.raises(KeyboardInterrupt):
        run(RunOptions(suite, root=tmp_path), reporters)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # no partial left


def test_a_state_that_cannot_be_written_is_said_once_and_fails_nothing(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    (root / LAST_FOLDER).write_text("a file, not a folder", encoding="utf-8")
    result = run_cli("eval", "run", cwd=root)
    assert result.returncode == 0, result.stderr
    (said,) = [line for line in result.stderr.splitlines() if "for `show`" in line]
    assert said.startswith("zeroclaw eval: the last run was not kept for `show`: ")
    assert str(root / LAST_FOLDER) in said and "Traceback" not in result.stderr


@pytest.mark.parametrize("batch", [1, 64])
def test_transcripts_that_cannot_be_written_are_said_and_the_report_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """A full disk under the transcripts, whether a batch of them is written as cases are
    done or the last few at the end: said once, the report kept naming none."""
    import errno

    from harness.reporters import json_report

    class Full(io.BytesIO):
        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(json_report, "BATCH", batch)
    started = LastRun.start

    def start(self: LastRun, total: int) -> None:
        started(self, total)
        assert self._handle is not None
        self._handle.close()
        self._handle = Full()  # where the transcripts go, full

    monkeypatch.setattr(LastRun, "start", start)
    said = io.StringIO()
    report = run(RunOptions(suite_of(tmp_path, 3), root=tmp_path), [LastRun(said)])
    assert len(report.cases) == 4
    assert said.getvalue().count("transcripts were not kept for `show`: ") == 1
    assert "No space left on device" in said.getvalue()
    document = json.loads((tmp_path / LAST_FOLDER / "last-report.json").read_text("utf-8"))
    assert document["transcripts"] is None and len(document["cases"]) == 4
    assert [p.name for p in (tmp_path / LAST_FOLDER).iterdir() if "transcripts" in p.name] == []


# --- reading it back ---------------------------------------------------------------------


def shown(run_cli: Cli, root: Path, case: str, *args: str) -> tuple[int, str, str]:
    result = run_cli("eval", "show", case, *args, cwd=root)
    return result.returncode, result.stdout, result.stderr


def test_a_report_naming_any_other_file_is_refused(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("echo-case")})
    assert run_cli("eval", "run", cwd=root).returncode == 0
    last = root / LAST_FOLDER / "last-report.json"
    document = json.loads(last.read_text("utf-8"))
    names = ("../../pyproject.toml", "/elsewhere/transcripts.jsonl", "transcripts-0.jsonl\n::x")
    for hostile in (*names, 7):
        document["transcripts"] = hostile
        last.write_text(json.dumps(document), encoding="utf-8")
        code, out, err = shown(run_cli, root, "echo-case")
        assert code == 1 and out == "", err
        assert err.startswith(f"zeroclaw eval: {last}: ") and "$.transcripts" in err, err
        assert not any(line.startswith("::") for line in err.splitlines())
        if isinstance(hostile, str):  # the report's schema refuses the rest
            assert "is not a transcripts file's name" in err


def test_a_damaged_or_vanished_transcripts_file_is_said(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("echo-case")})
    assert run_cli("eval", "run", cwd=root).returncode == 0
    (kept,) = (root / LAST_FOLDER).glob("transcripts-*.jsonl")
    kept.write_bytes(b'{"id": "echo-case", "fixture": "evals/regression/a.json", "tran\n')
    code, _, err = shown(run_cli, root, "echo-case")
    assert code == 1 and f"{kept}: line 1: not a kept transcript" in err, err
    kept.unlink()
    code, _, err = shown(run_cli, root, "echo-case")
    assert code == 1 and f"{kept}: gone: a newer run replaced the report" in err, err
    assert "Traceback" not in err
    os.mkfifo(kept)  # a reader never blocks on what is not a regular file
    code, _, err = shown(run_cli, root, "echo-case")
    assert code == 1 and f"{kept}: not a regular file (FIFO)" in err, err


def test_a_report_of_another_run_shows_what_it_keeps(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("echo-case")})
    assert run_cli("eval", "run", "--json-report", "r.json", cwd=root).returncode == 0
    assert json.loads((root / "r.json").read_text("utf-8"))["transcripts"] is None
    code, out, _ = shown(run_cli, root, "echo-case", "--report", "r.json")
    assert code == 0
    assert "  no transcript kept (a JSON report keeps failing cases' only;" in out
    assert "  turn 0 answered: The echo tool said: hello" in out  # its record, no transcript
