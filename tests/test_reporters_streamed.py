"""`harness.reporters.streamed`: the reports that hold every case (JSON, the last run's,
JUnit, HTML) written as cases are kept, byte for byte what rendering the whole verdict in
memory writes, and a run that keeps of a plain pass only what its totals need.

Each run here carries both: the streamed reporters the command line builds, and beside
them a document rendered whole from the verdict (the renderers `merge` and `eval report`
use, and what every report was before it streamed). One run, so the timings agree too:
nothing is masked."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import REPO, echo_fixture, failing_fixture, greeting_fixture, write_suite

from harness import pipeline
from harness.reporters import github, html, json_report, junit, markdown, table
from harness.reporters.base import Commit, Document, Output, Rendered, Reporter
from harness.reporters.last_run import LAST_FOLDER, LAST_NAME
from harness.verdict.reports import CaseReport, SuiteReport

OWN_LOOP = REPO / "examples" / "own_loop"


class Whole(Reporter):
    """A document rendered whole from the verdict at the end, as every report once was."""

    def __init__(self, render: Any, path: Path) -> None:
        self._document = Document(Rendered(render), path=path)

    def finish(self, report: SuiteReport) -> None:
        self._document.finish(report)


class Told(Reporter):
    """Every case as reporters are told it is done, whole."""

    whole_cases = False

    def __init__(self) -> None:
        self.cases: dict[str, CaseReport] = {}

    def case_done(self, case: CaseReport) -> None:
        self.cases[case.id] = case


def streamed(out: Path, *, stdout: Any = None) -> tuple[list[Reporter], Output]:
    values = {
        json_report.OPTION.dest: out / "streamed.json",
        junit.OPTION.dest: out / "streamed.xml",
        html.OPTION.dest: out / "streamed.html",
    }
    output = Output(values=values, stdout=stdout, stderr=sys.stderr, environ={})
    reporters: list[Reporter] = []
    for spec in (json_report.REPORTER, junit.REPORTER, html.REPORTER):
        reporters += spec.build(output)
    return [*reporters, Commit(output.files)], output


def run(options: pipeline.RunOptions, reporters: list[Reporter]) -> SuiteReport:
    return pipeline.run(options, sorted(reporters, key=lambda r: r.order))


@pytest.fixture
def own_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delitem(sys.modules, "loop", raising=False)
    monkeypatch.syspath_prepend(str(OWN_LOOP))
    yield OWN_LOOP
    sys.modules.pop("loop", None)


def mixed_suite(where: Path) -> Path:
    return write_suite(
        where,
        {
            "a_echo.json": echo_fixture("echo-case"),
            "b_bad.json": failing_fixture("bad-case"),
            "c_hi.json": greeting_fixture("hi-case"),
            "d_bad.json": failing_fixture("worse-case"),
            "e_hi.json": greeting_fixture("bye-case", reply="Hello, bye"),
        },
    )


SUITES = {
    "regression": lambda tmp, loop: (REPO / "evals" / "regression", "openai-agents", 1),
    "own loop": lambda tmp, loop: (loop / "evals", "loop:factory", 1),
    "failing": lambda tmp, loop: (mixed_suite(tmp / "suite"), "openai-agents", 1),
    "failing, two jobs": lambda tmp, loop: (mixed_suite(tmp / "suite"), "openai-agents", 2),
}


@pytest.mark.parametrize("name", SUITES)
def test_streamed_reports_are_the_whole_renderings_byte_for_byte(
    name: str, tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, agent, jobs = SUITES[name](tmp_path, own_loop)
    out = tmp_path / "out"
    out.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the last run is kept
    reporters, _ = streamed(out)
    reporters += [
        Whole(json_report.render_json, out / "whole.json"),
        Whole(junit.render_junit, out / "whole.xml"),
        Whole(lambda report: html.render_html(report, None), out / "whole.html"),
    ]
    options = pipeline.RunOptions(suite, agent, root=REPO, jobs=jobs)
    report = run(options, reporters)

    assert len(report.cases) >= 4
    for kind in ("json", "xml", "html"):
        whole = (out / f"whole.{kind}").read_bytes()
        assert (out / f"streamed.{kind}").read_bytes() == whole, kind
    last = work / LAST_FOLDER / LAST_NAME
    named = json.loads(last.read_bytes())["transcripts"]
    assert last.read_bytes() == json_report.render_json(report, named)
    assert [path.name for path in out.iterdir() if path.name.startswith(".")] == []


def test_the_stdout_document_is_the_file_written_once(
    tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    captured = tmp_path / "stdout"
    with captured.open("w") as stdout:
        values = {json_report.OPTION.dest: tmp_path / "report.json"}
        output = Output(values=values, stdout_format="json", stdout=stdout, stderr=sys.stderr)
        reporters = [*json_report.REPORTER.build(output), Commit(output.files)]
        report = run(pipeline.RunOptions(own_loop / "evals", "loop:factory"), reporters)
    assert captured.read_bytes() == (tmp_path / "report.json").read_bytes()
    assert json.loads(captured.read_bytes())["totals"]["cases"] == len(report.cases) == 4


def test_a_run_keeps_a_plain_pass_slim_and_every_summary_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = mixed_suite(tmp_path / "suite")
    told = Told()
    reporters, _ = streamed(tmp_path)
    report = run(pipeline.RunOptions(suite, root=tmp_path), [*reporters, told])

    passing = [case for case in report.cases if case.passed]
    assert len(passing) == 3 and all(c.record is None and not c.grades for c in passing)
    assert all(c.record is not None and c.grades for c in report.cases if not c.passed)
    whole = msgspec.structs.replace(report, cases=[told.cases[c.id] for c in report.cases])
    assert all(case.record is not None for case in whole.cases)
    # What the reports that read the verdict at the end say is the same of either.
    assert report.totals == whole.totals
    assert report.statistics == whole.statistics
    assert report.exit_code() == whole.exit_code()
    assert report.worst_first() == whole.worst_first()
    assert markdown.render_markdown(report) == markdown.render_markdown(whole)
    assert table.render_summary(report) == table.render_summary(whole)
    assert github.workflow_commands(report) == github.workflow_commands(whole)
    # And the reports written as cases were kept are the whole verdict's.
    assert (tmp_path / "streamed.json").read_bytes() == json_report.render_json(whole)
    assert (tmp_path / "streamed.xml").read_bytes() == junit.render_junit(whole)


def test_a_reporter_that_reads_cases_whole_keeps_them_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = mixed_suite(tmp_path / "suite")
    reporters, _ = streamed(tmp_path)
    whole = Whole(json_report.render_json, tmp_path / "whole.json")  # whole_cases: True
    report = run(pipeline.RunOptions(suite, root=tmp_path), [*reporters, whole])
    assert all(case.record is not None for case in report.cases)


def test_an_interrupted_run_leaves_no_spool_nor_half_report(
    tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "streamed.json").write_bytes(b"previous")

    class Interrupt(Reporter):
        whole_cases = False

        def __init__(self) -> None:
            self.kept = 0

        def case_kept(self, case: CaseReport) -> None:
            self.kept += 1
            if self.kept == 3:
                raise KeyboardInterrupt

    reporters, _ = streamed(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run(pipeline.RunOptions(own_loop / "evals", "loop:factory"), [*reporters, Interrupt()])
    assert (tmp_path / "streamed.json").read_bytes() == b"previous"
    assert not (tmp_path / "streamed.xml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [LAST_FOLDER, "streamed.json"]
    assert [p.name for p in (tmp_path / LAST_FOLDER).iterdir()] == [".gitignore"]


def test_a_report_renders_whole_when_the_cases_kept_are_not_the_verdicts(
    tmp_path: Path,
) -> None:
    from harness.reporters.streamed import Streamed

    stream = Streamed(json_report.JsonCases(tmp_path))
    stream.subscribe(object())  # not the one adding: nothing is spooled
    owner = object()
    stream.subscribe(owner)
    report = msgspec.json.decode(
        json_report.render_json(_one_case_report()), type=SuiteReport, strict=False
    )
    stream.add(report.cases[0], owner)
    assert stream.parts(report) == (json_report.render_json(report),)
    stream.release()
    stream.release()


def _one_case_report() -> SuiteReport:
    from conftest import passing_report, suite_report

    return suite_report("regression", passing_report())


def test_a_run_with_no_reporter_returns_every_case_whole(tmp_path: Path) -> None:
    suite = mixed_suite(tmp_path / "suite")
    report = pipeline.run(pipeline.RunOptions(suite, root=tmp_path))
    assert len(report.cases) == 5
    assert all(case.record is not None and case.grades for case in report.cases)


def test_a_spool_that_cannot_be_written_fails_its_report_not_the_run(
    tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import errno

    from harness.io.atomic import ReportWriteError, Spool

    def full(self: Spool, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(Spool, "write", full)
    reporters, _ = streamed(tmp_path)
    with pytest.raises(ReportWriteError) as raised:
        run(pipeline.RunOptions(own_loop / "evals", "loop:factory"), reporters)
    said = str(raised.value).splitlines()
    assert [line.split(":")[0] for line in said] == [
        str(tmp_path / "streamed.xml"),
        str(tmp_path / "streamed.json"),
        str(tmp_path / "streamed.html"),
    ]
    assert all(line.endswith("No space left on device") for line in said)
    assert not any(tmp_path.glob("streamed.*"))
    assert "the last run was not kept for `show`" in capsys.readouterr().err


@pytest.mark.parametrize("snapshots", ["fail", "warn"])
def test_snapshot_changes_are_numbered_and_linked_as_the_whole_page_has_them(
    snapshots: Any, tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two cases share one change (grouped, said once), a third has its own; under "warn"
    # the cases pass with a failed check, and are listed among the passes.
    suite = tmp_path / "suite"
    suite.mkdir()
    sources = sorted((own_loop / "evals").glob("*.json"))
    for k in range(8):
        fixture = json.loads(sources[k % len(sources)].read_text("utf-8"))
        fixture["id"] = f"case-{k}"
        (suite / f"case_{k}.json").write_text(json.dumps(fixture), "utf-8")
    monkeypatch.chdir(tmp_path)
    pipeline.run(pipeline.RunOptions(suite, "loop:factory", update_snapshots=True))
    snaps = suite / "__snapshots__" / "loop+factory"
    for k, was in ((0, "careful assistant"), (4, "careful assistant"), (5, "echo tool when")):
        path = snaps / f"case_{k}.snap"
        path.write_text(path.read_text("utf-8").replace(was, "other words", 1), "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    reporters, _ = streamed(out)
    reporters += [
        Whole(junit.render_junit, out / "whole.xml"),
        Whole(lambda report: html.render_html(report, None), out / "whole.html"),
    ]
    options = pipeline.RunOptions(suite, "loop:factory", root=tmp_path, snapshots=snapshots)
    report = run(options, reporters)

    assert sum(case.passed for case in report.cases) == (8 if snapshots == "warn" else 5)
    page = (out / "streamed.html").read_text("utf-8")
    assert page == (out / "whole.html").read_text("utf-8")
    assert "snapshot change 2" in page and "snapshot change 3" not in page
    assert (out / "streamed.xml").read_bytes() == (out / "whole.xml").read_bytes()


def test_cases_formatted_a_few_at_once_are_each_as_formatted_alone(
    tmp_path: Path, own_loop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSON reports and the last run's transcripts format their cases a batch at once:
    with batches of two over five cases (one left over, passes and failures mixed), every
    document is still the whole rendering, and each transcript line the case's alone."""

    class Lines(Reporter):
        whole_cases = False

        def __init__(self) -> None:
            self.lines: list[bytes] = []

        def case_done(self, case: CaseReport) -> None:
            line = json_report._transcript_line(case)  # before the run drops it
            if line is not None:
                self.lines.append(line)

    monkeypatch.setattr(json_report, "BATCH", 2)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    told = Lines()
    reporters, _ = streamed(out)
    reporters += [told, Whole(json_report.render_json, out / "whole.json")]
    report = run(pipeline.RunOptions(mixed_suite(tmp_path / "suite"), "openai-agents"), reporters)

    assert (out / "streamed.json").read_bytes() == (out / "whole.json").read_bytes()
    last = out / LAST_FOLDER / LAST_NAME
    named = json.loads(last.read_bytes())["transcripts"]
    assert last.read_bytes() == json_report.render_json(report, named)
    assert len(told.lines) == 3  # the three passes, in the order they were done
    assert (out / LAST_FOLDER / named).read_bytes() == b"".join(told.lines)
