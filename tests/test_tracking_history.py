"""`harness.tracking.history` and `--history-dir`: one transcript-free entry file per run,
safe when several runs write at once and never written through a symbolic link, read back
as a trend; `history.jsonl` still read."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from conftest import (
    Cli,
    failing_fixture,
    failing_report,
    passing_report,
    project,
    says,
    suite_report,
)

from harness.io.atomic import ReportWriteError
from harness.reporters.base import Output
from harness.reporters.history_dir import REPORTER as HISTORY_DIR
from harness.tracking import history as history_store
from harness.tracking import history_reader


def test_an_entry_holds_no_fixture_text_needles_or_model_output(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(
        tmp_path,
        {"a.json": says("secretive", "the private answer zc-needle-77", ["zc-needle-77"]),
         "b.json": failing_fixture("fails")},
        suite="evals/capability",
    )  # fmt: skip
    result = run_cli("eval", "run", "--history-dir", "history", cwd=root)
    assert result.returncode == 0, result.stderr
    [written] = list((root / "history").glob("*/*.json"))
    text = written.read_text(encoding="utf-8")
    assert "zc-needle-77" not in text and "I said bye" not in text
    entry = json.loads(text)
    assert entry["schema"] == "zeroclaw-eval/run-history/v1"
    assert entry["receipt"]["policy"]["kind"] == "capability"
    cases = {c["id"]: c for c in entry["cases"]}
    assert cases["secretive"]["verdict"] == "passed"
    assert cases["secretive"]["checks"] == {"$.expects.response_contains[0]": True}
    assert cases["fails"]["verdict"] == "failed"
    assert cases["fails"]["failed_categories"]
    assert "first entry" in result.stderr
    again = run_cli("eval", "run", "--history-dir", "history", cwd=root)
    assert "previous 50.0%" in again.stderr
    assert len(list((root / "history").glob("*/*.json"))) == 2


def test_runs_writing_at_once_never_take_each_others_file(tmp_path: Path) -> None:
    report = suite_report("capability", passing_report("a"), failing_report("b"))
    entry = history_store.entry_of(report)
    written: list[Path] = []
    lock = threading.Lock()

    def write() -> None:
        path = history_store.write(tmp_path, entry)
        with lock:
            written.append(path)

    threads = [threading.Thread(target=write) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(written)) == 16
    assert not list(tmp_path.rglob(".*.partial"))
    assert len(history_reader.load(tmp_path, report.suite)) == 16


def test_damaged_foreign_and_linked_files_are_skipped(tmp_path: Path) -> None:
    report = suite_report("capability", passing_report("a"))
    good = history_store.write(tmp_path, history_store.entry_of(report))
    folder = good.parent
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    (folder / "other.json").write_text(json.dumps({"schema": "zeroclaw-eval/history/v1"}))
    (folder / "linked.json").symlink_to(good)
    [entry] = history_reader.load(tmp_path, report.suite)
    assert entry.cases[0].id == "a"


def test_the_earlier_history_jsonl_is_read(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": says("passes", "hi", ["hi"])}, suite="evals/capability")
    assert run_cli("eval", "run", "--history", "history/h.jsonl", cwd=root).returncode == 0
    [entry] = history_reader.load(root / "history", "evals/capability")
    assert entry.legacy and entry.pass_rate == 1.0
    assert [(c.id, c.verdict) for c in entry.cases] == [("passes", "passed")]
    old = '{"schema": "zeroclaw-eval/history/v1", "timestamp": "2026-01-01T00:00:00+00:00", '
    old += '"suite": "s", "kind": "capability", "cases": 2, "passed": 1, "failed": 1, '
    old += '"errors": 0, "pass_rate": 0.5, "verdicts": {"a": "passed", "b": "failed"}}\n'
    (root / "history" / "old.jsonl").write_text(old + "garbage\n", encoding="utf-8")
    [older] = history_reader.load(root / "history", "s")
    assert older.pass_rate == 0.5 and len(older.cases) == 2


def test_an_earlier_history_jsonl_moved_into_the_directory_joins_the_trend(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a.json": says("passes", "hi", ["hi"])}, suite="evals/capability")
    run_cli("eval", "run", "--history", "old.jsonl", cwd=root)
    (root / "history").mkdir()
    (root / "old.jsonl").rename(root / "history" / "history.jsonl")
    run_cli("eval", "run", "--history-dir", "history", cwd=root)
    entries = history_reader.load(root / "history", "evals/capability")
    assert sorted(e.legacy for e in entries) == [False, True]  # both runs, the old one too


# --- links --------------------------------------------------------------------------------


def test_a_linked_suite_folder_is_never_written_through(run_cli: Cli, tmp_path: Path) -> None:
    fixtures = {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])}
    root = project(tmp_path, fixtures, suite="evals/capability")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "history").mkdir()
    (root / "history" / "evals-capability").symlink_to(elsewhere, target_is_directory=True)
    args = ("eval", "run", "--history-dir", "history", "--json-report", "r.json")
    result = run_cli(*args, cwd=root)
    assert result.returncode == 1
    assert (
        "zeroclaw eval: history/evals-capability: cannot write the history entry: "
        "it is a symbolic link"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    assert json.loads((root / "r.json").read_text("utf-8"))["totals"]["cases"] == 2


def test_a_history_directory_swapped_for_a_link_during_the_run_is_not_written_through(
    tmp_path: Path,
) -> None:
    # The directory is checked as the reporter is built; an agent may swap it meanwhile.
    history, elsewhere = tmp_path / "history", tmp_path / "elsewhere"
    elsewhere.mkdir()
    [reporter] = HISTORY_DIR.build(Output({"history_dir": str(history)}, stderr=io.StringIO()))
    history.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ReportWriteError, match="it is a symbolic link"):
        reporter.finish(suite_report("capability", passing_report("a")))
    assert list(elsewhere.iterdir()) == []
    folder = history_store.suite_directory(elsewhere, "evals/capability")
    folder.mkdir()  # and its suite's folder swapped for a link, under a real directory
    history.unlink()
    history.mkdir()
    (history / "evals-capability").symlink_to(folder, target_is_directory=True)
    with pytest.raises(history_store.WriteError, match="evals-capability"):
        history_store.write(history, history_store.entry_of(suite_report("capability")))
    assert list(folder.iterdir()) == []
