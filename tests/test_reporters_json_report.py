"""`harness.reporters.json_report`: the JSON report document, with the run record of each
case: the exact text, escaped; a lone surrogate replaced; no line a runner acts on."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from conftest import (
    AGENTS,
    Cli,
    errored_report,
    failing_report,
    green_project,
    greeting_fixture,
    passing_report,
    red_project,
    suite_report,
    write_suite,
)
from test_reporters_github import ATTACKS, runner_commands

from harness import run_suite
from harness.expectations.base import Grade
from harness.reporters.json_report import render_json
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.verdict.reports import SCHEMA, CaseReport, ErrorFrame

# --- the JSON document ----------------------------------------------------------------------


def test_json_report_document() -> None:
    report = suite_report("regression", passing_report(), failing_report(), errored_report())
    document = json.loads(render_json(report))
    assert document["schema"] == SCHEMA == "zeroclaw-eval/report/v2"
    assert document["suite"] == "evals/regression"
    assert document["kind"] == "regression"
    assert document["mode"] == "replay"
    assert document["agent"] == "openai-agents"
    assert document["exit_code"] == 1
    assert document["all_passed"] is False
    assert document["totals"] == {
        "cases": 3,
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "not_run": 0,
        "flaky": 0,
    }
    assert [c["id"] for c in document["cases"]] == ["ok", "bad", "err"]
    bad = document["cases"][1]
    assert bad["fixture"] == "evals/regression/bad.json"
    assert bad["passed"] is False
    assert bad["error"] is None
    assert bad["score"] == pytest.approx(1 / 3)
    assert {k: bad["grades"][1][k] for k in ("check", "passed", "detail", "category")} == {
        "check": 'tools_used("echo")',
        "passed": False,
        "detail": "not called; tools called: []",
        "category": "tool",
    }
    assert bad["record"]["final_response"] == "hello"
    assert bad["record"]["model_calls"] == 2
    err = document["cases"][2]
    assert err["error"].startswith("case 'err': turn 0")
    assert err["traceback"].startswith("Traceback")
    assert err["score"] is None


def test_json_report_keeps_the_run_record() -> None:
    call = RecordedCall("echo", '{"message":"日本"}', "日本", True, 0.5)
    record = RunRecord(
        final_response="done ✓",
        turn_responses=["done ✓"],
        calls=[call],
        model_calls=2,
        input_tokens=20,
        output_tokens=8,
        duration_ms=4.0,
    )
    case = CaseReport.graded("c", "c.json", [Grade("x", True, "found", "tool")], record)
    (document_case,) = json.loads(render_json(suite_report("regression", case)))["cases"]
    assert document_case["record"] == {
        "final_response": "done ✓",
        "turn_responses": ["done ✓"],
        "calls": [
            {
                "name": "echo",
                "arguments": '{"message":"日本"}',
                "result": "日本",
                "success": True,
                "duration_ms": 0.5,
                "agent": None,  # the agent under test: it has no graph
            }
        ],
        "model_calls": 2,
        "input_tokens": 20,
        "output_tokens": 8,
        "duration_ms": 4.0,
        "steps": None,  # kept only for live runs
        "transcript": None,  # a record built by hand has none
        "handoffs": [],
        "final_agent": None,
        "guardrails": [],  # no guardrail ran
        "context": None,  # the run had no context (`context_json` reads it)
        "context_error": None,
        "approvals": [],  # no tool call was held for approval
    }
    assert document_case["duration_ms"] == 4.0


def test_json_report_of_a_green_suite() -> None:
    document = json.loads(render_json(suite_report("capability", passing_report())))
    assert document["exit_code"] == 0
    assert document["all_passed"] is True
    assert document["kind"] == "capability"


# --- through run_suite ----------------------------------------------------------------------------


def test_green_suite_through_run_suite_reports(tmp_path: Path) -> None:
    report = run_suite(
        write_suite(tmp_path / "evals" / "capability", {"g.json": greeting_fixture("hi")}),
        agent="openai-agents",
        root=tmp_path,
    )
    assert report.kind == "capability"
    assert report.suite.endswith("capability")
    document = json.loads(render_json(report))
    assert document["cases"][0]["fixture"] == "evals/capability/g.json"
    assert document["exit_code"] == 0


# --- untrusted text ----------------------------------------------------------------------------


def test_a_lone_surrogate_becomes_u_fffd_instead_of_a_traceback() -> None:
    record = RunRecord(final_response="bad \ud800 text", turn_responses=["\udfff"])
    case = CaseReport.graded(
        "id\ud800", "c.json", [Grade("c", False, "saw \ud800", "response")], record
    )
    data = render_json(suite_report("regression", case))
    data.decode("utf-8")  # strict
    (document_case,) = json.loads(data)["cases"]
    assert document_case["id"] == "id\ufffd"
    assert document_case["record"]["final_response"] == "bad \ufffd text"
    assert document_case["record"]["turn_responses"] == ["\ufffd"]
    assert document_case["grades"][0]["detail"] == "saw \ufffd"


def test_the_document_holds_no_runner_command_and_keeps_the_exact_text() -> None:
    forged = "\n".join(ATTACKS) + " \x9b2J \u202eevil \x7f"
    record = RunRecord(final_response=forged)
    case = CaseReport.graded(
        "##[error]id",
        "##[warning]f.json",
        [Grade("##[notice]c", False, forged, "response")],
        record,
    )
    data = render_json(suite_report("regression", case))
    text = data.decode("utf-8")
    assert runner_commands(text) == []
    assert "##[" not in text
    assert not [c for c in text if c in "\x7f\x9b\u202e\u2028\x85"]  # written as escapes
    (document_case,) = json.loads(data)["cases"]
    assert document_case["id"] == "##[error]id"
    assert document_case["fixture"] == "##[warning]f.json"
    assert document_case["record"]["final_response"] == forged
    assert document_case["grades"][0] == {**document_case["grades"][0], "detail": forged}


def read_documents(stream: str) -> list[dict[str, object]]:
    """Every JSON document of a stream of them, as a script reads the stdout of
    `nox -s eval_regression -- --format json` (one document per agent, one after another)."""
    decoder, documents, at = json.JSONDecoder(), [], 0
    while at < len(stream.rstrip()):
        document, at = decoder.raw_decode(stream, at)
        documents.append(document)
        while at < len(stream) and stream[at].isspace():
            at += 1
    return documents


def test_one_document_per_agent_on_one_stdout_reads_as_one_each(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = green_project(tmp_path)
    stdout = ""
    for agent in AGENTS:  # the regression session runs each agent in turn, on one stdout
        result = run_cli("eval", "run", "--agent", agent, "--format", "json", cwd=root)
        assert result.returncode == 0, result.stderr
        assert result.stdout.endswith("}\n")
        stdout += result.stdout
    documents = read_documents(stdout)
    assert [d["agent"] for d in documents] == list(AGENTS)
    assert all(d["exit_code"] == 0 for d in documents)


def test_a_run_errors_frames_are_a_field_of_their_own_and_read_back(tmp_path: Path) -> None:
    from harness.tracking.verify import read_report

    frames = [ErrorFrame(file="agent.py", line=14, function="run_turn")]
    err = msgspec.structs.replace(errored_report(), error_frames=frames)
    data = render_json(suite_report("regression", passing_report(), err))
    ok, errored = json.loads(data)["cases"]
    assert ok["error_frames"] is None
    assert errored["error_frames"] == [{"file": "agent.py", "line": 14, "function": "run_turn"}]
    assert errored["error"].startswith("case 'err': turn 0")  # the error is as it was
    (tmp_path / "r.json").write_bytes(data)
    report, _ = read_report(tmp_path / "r.json")
    assert report.cases[1].error_frames == frames


# --- the last run's report, kept for `show` in .zeroclaw-eval ------------------------------


def test_a_linked_state_folder_is_never_written_through(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".zeroclaw-eval").symlink_to(elsewhere)
    result = run_cli("eval", "run", cwd=root)
    # Keeping the last report is never a reason for the run to fail: it is said.
    assert result.returncode == 0, result
    assert ".zeroclaw-eval: it is a symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_dangling_gitignore_link_creates_nothing(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    target = tmp_path / "planted"
    (root / ".zeroclaw-eval").mkdir()
    (root / ".zeroclaw-eval" / ".gitignore").symlink_to(target)
    result = run_cli("eval", "run", cwd=root)
    assert result.returncode == 0, result
    assert ".gitignore: it is a symbolic link" in result.stderr
    assert not target.exists()
    assert not (root / ".zeroclaw-eval" / "last-report.json").exists()


def test_the_state_folder_keeps_its_own_gitignore(tmp_path: Path, run_cli: Cli) -> None:
    root = green_project(tmp_path)
    (root / ".zeroclaw-eval").mkdir()
    (root / ".zeroclaw-eval" / ".gitignore").write_text("last-report.json\n")
    assert run_cli("eval", "run", cwd=root).returncode == 0
    assert (root / ".zeroclaw-eval" / ".gitignore").read_text() == "last-report.json\n"
    assert json.loads((root / ".zeroclaw-eval" / "last-report.json").read_bytes())["cases"]


def test_a_case_is_formatted_once_for_the_json_report_and_the_last_run_kept(
    tmp_path: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.reporters import json_report

    encoded: list[str] = []
    real = json_report.encoded_json

    def counted(value: object) -> bytes:
        # Cases are encoded a list of them at once.
        for case in value if isinstance(value, list) else [value]:
            if isinstance(case, CaseReport):
                encoded.append(case.id)
        return real(value)

    monkeypatch.setattr(json_report, "encoded_json", counted)
    root = red_project(tmp_path)
    result = run_cli("eval", "run", "--json-report", "r.json", cwd=root)
    assert result.returncode == 1, result.stderr
    ids = [c["id"] for c in json.loads((root / "r.json").read_text("utf-8"))["cases"]]
    assert len(ids) == 3 and sorted(encoded) == sorted(ids)  # once each, for both reports

    def cases_of(report: bytes) -> bytes:
        return report.split(b'\n  "cases": [\n', 1)[1].split(b"\n  ],\n", 1)[0]

    last = (root / ".zeroclaw-eval" / "last-report.json").read_bytes()
    assert cases_of(last) == cases_of((root / "r.json").read_bytes())


# --- the parts a worker process formats -----------------------------------------------------


def test_a_part_a_worker_formatted_is_used_only_for_its_report_in_the_state_it_was_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.reporters import json_report

    monkeypatch.setattr(json_report, "_last_batch", None)
    case = passing_report("held")
    assert case.record is not None
    case.record.transcript = []
    line, part, dropped = json_report.WorkerParts.render(case)
    assert dropped and line is not None
    # What the worker made is what this process makes of the case, transcript dropped...
    plain = msgspec.structs.replace(case, record=msgspec.structs.replace(case.record))
    assert plain.record is not None
    plain.record.transcript = None
    assert part == json_report._formatted(plain)
    assert line == json_report._transcript_line(case)
    # ...and a part held for a report stands for that one report only, in that state.
    json_report.WorkerParts.hold(case, (b"its line", b"its part", True))
    assert json_report.WorkerParts.line(case) == b"its line"
    assert json_report.WorkerParts.line(plain) == json_report._transcript_line(plain)
    assert json_report.case_part(plain) == part  # an equal report is not that report
    assert json_report.case_part(case) != b"its part"  # its transcript was kept here
    json_report.WorkerParts.hold(case, (b"its line", b"its part", True))
    case.record.transcript = None
    json_report._last_batch = None
    assert json_report.case_part(case) == b"its part"
    json_report.WorkerParts.release()


def test_the_reports_of_a_run_in_workers_are_those_this_process_would_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from conftest import echo_fixture, failing_fixture, under_scripted_fixture

    from harness import pipeline
    from harness.reporters import json_report
    from harness.reporters.base import Commit, Output, Reporter
    from harness.reporters.last_run import LAST_FOLDER, LAST_NAME
    from harness.verdict.reports import SuiteReport

    class Told(Reporter):
        """Each case's transcript line as it is done; it reads the verdict whole at the
        end (`whole_cases`), so the verdict is rendered whole here to compare with."""

        def __init__(self) -> None:
            self.lines: dict[str, bytes] = {}

        def case_done(self, case: CaseReport) -> None:
            self.lines[case.id] = json_report._transcript_line(case) or b""

    used: list[bytes] = []
    real = json_report.WorkerParts.part

    def counted(case: CaseReport) -> bytes | None:
        part = real(case)
        if part is not None:
            used.append(part)
        return part

    monkeypatch.setattr(json_report.WorkerParts, "part", staticmethod(counted))
    monkeypatch.chdir(tmp_path)
    cases = {f"{n}a.json": echo_fixture(f"echo-{n}", f"m{n}") for n in range(4)}
    cases |= {f"{n}b.json": failing_fixture(f"bad-{n}") for n in range(2)}
    cases["9c.json"] = under_scripted_fixture("under")
    suite = write_suite(tmp_path / "suite", cases)
    values = {json_report.OPTION.dest: tmp_path / "report.json"}
    output = Output(values=values, stdout=io.StringIO(), stderr=io.StringIO(), environ={})
    told = Told()
    reporters = [told, *json_report.REPORTER.build(output), Commit(output.files)]
    report: SuiteReport = pipeline.run(
        pipeline.RunOptions(suite, root=tmp_path, jobs=2), sorted(reporters, key=lambda r: r.order)
    )
    assert len(report.cases) == 7 and report.totals.passed == 4
    assert len(used) == 7  # every case's part came from its worker
    last = (tmp_path / LAST_FOLDER / LAST_NAME).read_bytes()
    named = json.loads(last)["transcripts"]
    assert last == json_report.render_json(report, named)
    assert (tmp_path / "report.json").read_bytes() == json_report.render_json(report)
    kept = (tmp_path / LAST_FOLDER / named).read_bytes().splitlines(keepends=True)
    passing = [case.id for case in report.cases if case.passed]
    assert sorted(kept) == sorted(told.lines[case_id] for case_id in passing)


@pytest.mark.parametrize("state", ["last run off", "last run broken", "table broken"])
def test_what_workers_rendered_for_a_case_is_let_go_once_the_case_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str
) -> None:
    """A reporter that is off (the last run's folder cannot be written) or broken (its
    stream failed) is told no case, and takes none of the parts its workers rendered:
    they are let go as each case is told, not held for the whole run."""
    import contextlib
    import io

    from conftest import echo_fixture

    from harness import pipeline
    from harness.io.atomic import ReportWriteError
    from harness.reporters import json_report, table
    from harness.reporters.base import Commit, Output, Reporter

    class Stale(Reporter):
        """At each case, the cases told before it whose parts are still held."""

        def __init__(self) -> None:
            self.told: list[CaseReport] = []  # kept alive: their ids stay theirs
            self.stale: list[str] = []

        def case_kept(self, case: CaseReport) -> None:
            held = json_report.WorkerParts._held.keys() | table.TableLines._held.keys()
            self.stale += [told.id for told in self.told if id(told) in held]
            self.told.append(case)

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("the pipe closed")

    def off(*args: object, **kwargs: object) -> None:
        raise OSError("read-only")

    monkeypatch.chdir(tmp_path)
    output = Output(values={}, stdout=io.StringIO(), stderr=io.StringIO(), environ={})
    (last,) = json_report.REPORTER.build(output)
    reporters: list[Reporter] = [last, Commit(output.files)]
    if state == "last run off":
        monkeypatch.setattr(json_report, "own_folder", off)
    elif state == "last run broken":
        monkeypatch.setattr(last, "case_done", off)
    else:
        reporters.append(table.TableReporter(Broken()))
    stale = Stale()
    suite = write_suite(
        tmp_path / "suite", {f"{n}.json": echo_fixture(f"echo-{n}", f"m{n}") for n in range(8)}
    )
    options = pipeline.RunOptions(suite, root=tmp_path, jobs=2)
    # A broken reporter's failure is raised once the run is over.
    with pytest.raises(ReportWriteError) if "broken" in state else contextlib.nullcontext():
        pipeline.run(options, sorted([*reporters, stale], key=lambda r: r.order))
    assert len(stale.told) == 8 and all(case.passed for case in stale.told)
    assert stale.stale == []
