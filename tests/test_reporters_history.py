"""`harness.reporters.history`: `--history` appends one JSON line per run with the pass rate
and per-case verdicts; a capability suite with a malformed fixture measures nothing, and
one with a run error exits 1 but is still recorded."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Cli, project, says, under_scripted_fixture

from harness.expectations.base import Grade
from harness.io import tail_lines
from harness.io.atomic import ReportWriteError
from harness.reporters.base import Output
from harness.reporters.history import HISTORY_SCHEMA, append_history
from harness.reporters.history import REPORTER as HISTORY
from harness.run_record import RunRecord
from harness.verdict.reports import CaseReport, SuiteReport


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# --- through the command line -------------------------------------------------------------


def test_each_run_appends_one_line_and_reports_the_trend(run_cli: Cli, tmp_path: Path) -> None:
    suite = tmp_path / "project" / "evals" / "capability"
    root = project(
        tmp_path,
        {
            "a.json": says("passes", "hi", ["hi"]),
            "b.json": says("fails", "hi", ["zzz"]),
            "c.json": says("also-passes", "hi there", ["there"]),
            "d.json": says("fails-too", "hi", ["hi", "zzz"]),
        },
        suite="evals/capability",
    )
    history = root / "reports" / "history.jsonl"  # its directory does not exist yet
    before = datetime.now(timezone.utc).replace(microsecond=0)
    first = run_cli("eval", "run", "--history", "reports/history.jsonl", cwd=root)
    assert first.returncode == 0, first.stderr  # capability: failed checks do not gate
    assert "pass rate 50.0% (first entry) appended to reports/history.jsonl" in first.stderr
    [entry] = entries(history)
    assert entry["schema"] == HISTORY_SCHEMA == "zeroclaw-eval/pass-rate-line/v1"
    assert entry["suite"] == "evals/capability"
    assert entry["kind"] == "capability"
    assert entry["agent"] == "openai-agents"
    assert entry["mode"] == "replay"
    assert entry["pass_rate"] == 0.5
    assert (entry["cases"], entry["passed"], entry["failed"], entry["errors"]) == (4, 2, 2, 0)
    assert entry["verdicts"] == {
        "passes": "passed",
        "fails": "failed",
        "also-passes": "passed",
        "fails-too": "failed",
    }
    stamp = datetime.fromisoformat(entry["timestamp"])
    assert stamp.utcoffset() == timedelta(0)
    assert before <= stamp <= datetime.now(timezone.utc)

    # the suite gets better; a run error appears
    (suite / "b.json").write_text(json.dumps(says("fails", "zzz", ["zzz"])), encoding="utf-8")
    (suite / "e.json").write_text(json.dumps(under_scripted_fixture("errors")), encoding="utf-8")
    second = run_cli("eval", "run", "--history", history, "--format", "json", cwd=root)
    assert second.returncode == 1  # a run error fails even a capability suite
    json.loads(second.stdout)  # stdout is still only the JSON document
    assert "pass rate 60.0% (previous 50.0%)" in second.stderr
    first_again, latest = entries(history)
    assert first_again == entry  # earlier lines are never rewritten
    assert latest["pass_rate"] == 0.6
    assert latest["verdicts"] == {
        "passes": "passed",
        "fails": "passed",
        "also-passes": "passed",
        "fails-too": "failed",
        "errors": "error",
    }
    assert (latest["failed"], latest["errors"]) == (1, 1)


def test_a_damaged_history_line_is_skipped_not_fatal(run_cli: Cli, tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])},
        suite="evals/capability",
    )
    history = root / "history.jsonl"
    good = json.dumps({"schema": HISTORY_SCHEMA, "pass_rate": 0.25})
    history.write_text(f"{good}\n{{not json at all\n[1, 2]\n\n", encoding="utf-8")
    result = run_cli("eval", "run", "--history", "history.jsonl", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "pass rate 50.0% (previous 25.0%)" in result.stderr
    lines = history.read_text("utf-8").splitlines()
    assert lines[:4] == [good, "{not json at all", "[1, 2]", ""]  # kept as they were
    assert json.loads(lines[4])["pass_rate"] == 0.5
    assert len(lines) == 5


def test_an_unwritable_history_path_exits_1_with_a_clear_message(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a.json": says("passes", "hi", ["hi"])}, suite="evals/capability")
    (root / "reports").write_text("a file, not a directory", encoding="utf-8")
    result = run_cli(
        "eval", "run", "--history", "reports/history.jsonl", "--json-report", "r.json", cwd=root
    )
    assert result.returncode == 1
    assert "reports/history.jsonl: cannot append history" in result.stderr
    assert "Traceback" not in result.stderr
    assert (root / "reports").read_text("utf-8") == "a file, not a directory"
    # A directory where the file should be is refused the same way.
    (root / "hist").mkdir()
    result = run_cli("eval", "run", "--history", "hist", cwd=root)
    assert result.returncode == 1
    assert "hist: cannot append history" in result.stderr


# --- append_history, unit -----------------------------------------------------------------


def report_of(*verdicts: str, kind: str = "capability") -> SuiteReport:
    cases = []
    for i, verdict in enumerate(verdicts):
        case_id = f"case-{i}"
        if verdict == "error":
            cases.append(CaseReport.errored(case_id, f"{case_id}.json", "boom", None))
        else:
            grade = Grade("c", verdict == "passed", "d", "response")
            cases.append(CaseReport.graded(case_id, f"{case_id}.json", [grade], RunRecord()))
    return SuiteReport(suite="evals/x", kind=kind, mode="replay", agent="a", cases=cases)  # type: ignore[arg-type]


def test_append_history_writes_whole_lines_and_reads_the_last_good_rate(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    assert append_history(path, report_of("passed", "failed", "failed", "error")).startswith(
        "pass rate 25.0% (first entry)"
    )
    assert append_history(path, report_of("passed")).startswith("pass rate 100.0% (previous 25.0%)")
    assert [e["verdicts"] for e in entries(path)] == [
        {"case-0": "passed", "case-1": "failed", "case-2": "failed", "case-3": "error"},
        {"case-0": "passed"},
    ]
    assert path.read_text("utf-8").endswith("\n")
    assert append_history(path, report_of()).startswith("pass rate 0.0% (previous 100.0%)")
    assert entries(path)[-1]["cases"] == 0


@pytest.mark.parametrize(
    "damage",
    [
        b'{"pass_rate": 0.75}\n{"schema": "zeroclaw-eval/history/v1", "pass_ra',  # cut short
        b'{"pass_rate": 0.75}\n\xff\xfe not utf-8 \x80\n',  # binary garbage
        b'{"pass_rate": 0.75}\n"a string"\n{"pass_rate": "high"}\nnull\n',  # wrong shapes
    ],
)
def test_damaged_lines_are_skipped_and_never_swallow_the_next_entry(
    tmp_path: Path, damage: bytes
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(damage)
    message = append_history(path, report_of("passed", "failed"))
    assert "(previous 75.0%)" in message
    last = path.read_bytes().splitlines()[-1]
    assert json.loads(last)["pass_rate"] == 0.5  # the new entry is a line of its own
    assert path.read_bytes().startswith(damage.rstrip(b"\n"))  # nothing earlier was changed


def test_an_entry_with_unicode_line_separators_is_still_one_line(tmp_path: Path) -> None:
    # JSON leaves U+2028, U+0085 and friends raw (ensure_ascii=False); only "\n" ends a line.
    path = tmp_path / "h.jsonl"
    report = report_of("passed", "failed")
    odd = msgspec.structs.replace(report.cases[0], id="odd\u2028id\x85with\x1cseparators")
    report = msgspec.structs.replace(report, cases=[odd, *report.cases[1:]])
    append_history(path, report)
    assert "(previous 50.0%)" in append_history(path, report_of("passed"))
    lines = path.read_text("utf-8").split("\n")
    assert lines[-1] == ""
    assert [json.loads(line)["pass_rate"] for line in lines[:-1]] == [0.5, 1.0]
    assert "odd\u2028id\x85with\x1cseparators" in json.loads(lines[0])["verdicts"]


def test_append_history_error_is_a_report_write_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ReportWriteError, match="cannot append history"):
        append_history(blocker / "h.jsonl", report_of("passed"))


# --- the capability gate and the history -------------------------------------------------


@pytest.mark.parametrize("how", ["directory", "flag"])
def test_capability_with_a_malformed_fixture_exits_1(
    run_cli: Cli, tmp_path: Path, how: str
) -> None:
    suite = "evals/capability" if how == "directory" else "evals/other"
    root = project(
        tmp_path,
        {
            "a.json": says("passes", "hi", ["hi"]),
            "b.json": says("fails", "hi", ["zzz"]),
            "c.json": '{"model_name": "broken", "turns": [',
        },
        suite=suite,
    )
    flags = [] if how == "directory" else ["--suite-kind", "capability"]
    result = run_cli("eval", "run", *flags, "--history", "h.jsonl", cwd=root)
    assert result.returncode == 1
    assert "c.json" in result.stderr
    assert "nothing was run" in result.stderr
    assert not (root / "h.jsonl").exists()  # a refused suite measured nothing


@pytest.mark.parametrize("how", ["directory", "flag"])
def test_capability_with_a_run_error_exits_1(run_cli: Cli, tmp_path: Path, how: str) -> None:
    suite = "evals/capability" if how == "directory" else "evals/other"
    root = project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": under_scripted_fixture("errors")},
        suite=suite,
    )
    flags = [] if how == "directory" else ["--suite-kind", "capability"]
    result = run_cli("eval", "run", *flags, "--format", "json", "--history", "h.jsonl", cwd=root)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert (document["kind"], document["exit_code"]) == ("capability", 1)
    assert document["totals"]["errors"] == 1
    # the run is still recorded: the error is part of what is tracked
    [entry] = entries(root / "h.jsonl")
    assert entry["verdicts"] == {"passes": "passed", "errors": "error"}


def test_a_lone_surrogate_or_a_forged_command_in_a_case_id_is_written_safely(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.jsonl"
    report = report_of("passed", "failed")
    odd = [
        msgspec.structs.replace(report.cases[0], id="bad\ud800id"),
        msgspec.structs.replace(report.cases[1], id="##[error]forged \x9b\u202e"),
    ]
    report = msgspec.structs.replace(report, cases=odd, suite="evals/\udfff")
    append_history(path, report)  # a lone surrogate cannot be written as UTF-8
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict
    assert b"##[" not in raw and "\x9b\u202e".encode() not in raw
    [entry] = entries(path)
    assert entry["suite"] == "evals/\ufffd"
    assert entry["verdicts"] == {"bad\ufffdid": "passed", "##[error]forged \x9b\u202e": "failed"}


# --- damaged lines, links, and what appending reads -------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
DAMAGED_LINES = {
    "deep nesting": (b'{"pass_rate": 0.5, "x": ' + DEEP.encode() + b"}", "nested too deeply"),
    "a huge number": (b'{"pass_rate": 1e999}', "Number out of range - at `$.pass_rate`"),
    "a rate out of range": (b'{"pass_rate": 7.5}', "7.5 is not between 0 and 1"),
    "a wrong type": (b'{"pass_rate": [0.5]}', "Expected `float`, got `array`"),
    "invalid UTF-8": (b'{"pass_rate": 0.5, "x": "\xff"}', "not UTF-8"),
    "a huge line": (b'{"pass_rate": 0.5, "x": "' + b"x" * (5 << 20) + b'"}', "longer than"),
}


@pytest.mark.parametrize("damage", DAMAGED_LINES, ids=list(DAMAGED_LINES))
def test_a_damaged_last_line_is_skipped_with_a_warning_naming_its_line(
    run_cli: Cli, tmp_path: Path, damage: str
) -> None:
    root = project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])},
        suite="evals/capability",
    )
    history = root / "history.jsonl"
    damaged, fault = DAMAGED_LINES[damage]
    good = json.dumps({"schema": HISTORY_SCHEMA, "pass_rate": 0.25}).encode()
    history.write_bytes(good + b"\n" + damaged + b"\n")
    result = run_cli("eval", "run", "--history", "history.jsonl", cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    [warning] = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert warning.startswith("zeroclaw eval: history.jsonl, line 2: history line skipped: ")
    assert fault in warning
    assert "pass rate 50.0% (previous 25.0%) appended to history.jsonl" in result.stderr
    lines = history.read_bytes().split(b"\n")
    assert lines[:2] == [good, damaged] and lines[3] == b""
    assert json.loads(lines[2])["pass_rate"] == 0.5


def test_only_the_lines_after_the_last_good_one_are_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(f'{DEEP}\n{{"pass_rate": 0.75}}\nnot json\n\n[1]\n', encoding="utf-8")
    stderr = io.StringIO()
    assert "(previous 75.0%)" in append_history(path, report_of("passed"), "h.jsonl", stderr)
    warnings = stderr.getvalue().splitlines()
    assert [w.split(": history line skipped")[0] for w in warnings] == [
        "zeroclaw eval: h.jsonl, line 5",
        "zeroclaw eval: h.jsonl, line 3",
    ]


def test_appending_reads_the_end_of_the_history_not_all_of_it(tmp_path: Path) -> None:
    io_counters = Path("/proc/self/io")
    if not io_counters.exists():
        pytest.skip("needs Linux's per-process I/O counters")

    def bytes_read() -> int:
        [rchar] = [
            line for line in io_counters.read_text().splitlines() if line.startswith("rchar")
        ]
        return int(rchar.split()[1])

    path = tmp_path / "h.jsonl"
    line = json.dumps({"schema": HISTORY_SCHEMA, "pass_rate": 0.5, "verdicts": {"a": "passed"}})
    path.write_text((line + "\n") * 30_000, encoding="utf-8")  # some 3 MB: 30,000 runs
    size = path.stat().st_size
    before = bytes_read()
    assert "(previous 50.0%)" in append_history(path, report_of("passed"))
    assert bytes_read() - before < size // 10


def test_a_history_file_swapped_for_a_link_during_the_run_is_not_written_through(
    tmp_path: Path,
) -> None:
    path, elsewhere = tmp_path / "h.jsonl", tmp_path / "elsewhere.txt"
    elsewhere.write_text("not yours\n", encoding="utf-8")
    stderr = io.StringIO()
    [reporter] = HISTORY.build(Output({"history": str(path)}, stderr=stderr))  # checked now
    path.symlink_to(elsewhere)  # an agent swaps a link in during the run
    with pytest.raises(ReportWriteError, match=r"h\.jsonl: cannot append history: .*symbolic link"):
        reporter.finish(report_of("passed"))
    assert elsewhere.read_text("utf-8") == "not yours\n"


def test_a_history_of_nothing_but_damage_is_said_in_a_few_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("not json\n" * 1000, encoding="utf-8")
    stderr = io.StringIO()
    assert "(first entry)" in append_history(path, report_of("passed"), "h.jsonl", stderr)
    warnings = stderr.getvalue().splitlines()
    assert len(warnings) == tail_lines.MAX_DAMAGED
    assert warnings[0].startswith("zeroclaw eval: h.jsonl, line 1000: history line skipped: ")
    assert warnings[-1].startswith(f"zeroclaw eval: h.jsonl, line {1001 - len(warnings)}: ")
