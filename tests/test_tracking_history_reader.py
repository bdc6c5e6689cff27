"""`harness.tracking.history_reader`: a run reads only the history entries it shows, each once, and
a damaged entry or line (a number out of range, deep nesting, a wrong type, invalid UTF-8,
a huge file or line) is said, naming its file and line, and left out of the trend: the run
stays green and its own entry is written. `zeroclaw eval report --history-dir` too."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Cli, failing_report, passing_report, project, says, suite_report

from harness.io import tail_lines
from harness.tracking import history as history_store
from harness.verdict.receipts import SuiteReceipt, policy_of

# --- damaged and hostile entries ------------------------------------------------------------

START = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
SUITE = "evals/capability"


def capability_project(tmp_path: Path) -> Path:
    """A capability suite of two cases, one passing: every run of it is at 50%."""
    return project(
        tmp_path,
        {"a.json": says("passes", "hi", ["hi"]), "b.json": says("fails", "hi", ["zzz"])},
        suite=SUITE,
    )


def past_entry(day: int, *verdicts: bool) -> history_store.HistoryEntry:
    """An earlier run of the suite (its cases `c0`, `c1`, … passing as `verdicts`), `day`
    days after START."""
    cases = [
        passing_report(f"c{i}") if v else failing_report(f"c{i}") for i, v in enumerate(verdicts)
    ]
    report = msgspec.structs.replace(suite_report("capability", *cases), suite=SUITE)
    return history_store.entry_of(report, START + timedelta(days=day))


def chart_values(summary: str) -> list[float]:
    [values] = re.findall(r"^    line \[(.*)\]$", summary, re.MULTILINE)
    return [float(v) for v in values.split(", ")]


def damaged_at(directory: Path, day: int, data: bytes) -> Path:
    """`data` under the name a run of `day` would have written its entry."""
    folder = history_store.suite_directory(directory, SUITE)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / history_store.entry_name(past_entry(day, True))
    path.write_bytes(data)
    return path


def good_text(day: int = 1) -> str:
    return history_store.encode(past_entry(day, True, True)).decode("utf-8")


DEEP = "[" * 100_000 + "]" * 100_000
DAMAGE = {
    "a huge number": (good_text().replace('"cases": 2', '"cases": 1e999', 1), "$.totals.cases"),
    "deep nesting": (good_text().replace("{", '{"padding": ' + DEEP + ",", 1), "nested"),
    "a wrong type": (good_text().replace('"pass_rate": 1.0', '"pass_rate": "high"'), "pass_rate"),
    "a rate out of range": (
        good_text().replace('"pass_rate": 1.0', '"pass_rate": 7.5'),
        "pass_rate",
    ),
    "invalid UTF-8": (good_text().replace("c0", "c\udcff0"), "UTF-8"),
    "not JSON": ("{not json", "malformed"),
    "another schema": (good_text().replace("run-history/v1", "history/v1"), "schema"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_entry_is_skipped_with_a_warning_and_this_run_is_still_written(
    run_cli: Cli, tmp_path: Path, damage: str
) -> None:
    root = capability_project(tmp_path)
    history = root / "history"
    history_store.write(history, past_entry(1, True, False, False, False))  # 25%
    text, fault = DAMAGE[damage]
    bad = damaged_at(history, 2, text.encode("utf-8", errors="surrogateescape"))
    history_store.write(history, past_entry(3, True, True, True, False))  # 75%
    args = ("eval", "run", "--history-dir", "history", "--summary", "s.md", "--html", "r.html")
    result = run_cli(*args, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [warning] = [line for line in result.stderr.splitlines() if bad.name in line]
    assert warning.startswith(f"zeroclaw eval: history/evals-capability/{bad.name}: ")
    assert fault in warning and "skipped" in warning
    assert len(list(bad.parent.glob("*.json"))) == 4  # this run's entry was written
    # The trend is drawn from the good entries, the damaged one left out.
    assert chart_values((root / "s.md").read_text("utf-8")) == [25.0, 75.0, 50.0]
    assert "previous 75.0%" in result.stderr


def test_an_entry_too_large_to_read_is_skipped_with_a_warning(run_cli: Cli, tmp_path: Path) -> None:
    root = capability_project(tmp_path)
    history_store.write(root / "history", past_entry(1, True))
    limit = history_store.MAX_ENTRY_BYTES
    bad = damaged_at(root / "history", 2, b" " * limit + good_text().encode())
    result = run_cli("eval", "run", "--history-dir", "history", "--summary", "s.md", cwd=root)
    assert result.returncode == 0, result.stderr
    [warning] = [line for line in result.stderr.splitlines() if bad.name in line]
    assert f"{limit}-byte limit" in warning
    assert chart_values((root / "s.md").read_text("utf-8")) == [100.0, 50.0]


def legacy_line(day: int, rate: float, **changed: Any) -> str:
    line = {
        "schema": "zeroclaw-eval/pass-rate-line/v1",
        "timestamp": (START + timedelta(days=day)).isoformat(timespec="seconds"),
        "suite": SUITE,
        "kind": "capability",
        "agent": "openai-agents",
        "mode": "replay",
        "cases": 4,
        "passed": int(rate * 4),
        "failed": 4 - int(rate * 4),
        "errors": 0,
        "pass_rate": rate,
        "verdicts": {},
    }
    return json.dumps({**line, **changed})


@pytest.mark.parametrize(
    ("damaged", "fault"),
    [
        (legacy_line(2, 0.5).replace('"cases": 4', '"cases": 1e999'), "$.cases"),
        ('{"schema": "zeroclaw-eval/pass-rate-line/v1", "x": ' + DEEP + "}", "nested"),
        (legacy_line(2, 0.5, verdicts=["a"]), "$.verdicts"),
        ("x" * 400_000, "longer than 300000 bytes"),
    ],
    ids=["a huge number", "deep nesting", "a wrong type", "a huge line"],
)
def test_a_damaged_line_of_a_history_jsonl_in_the_directory_is_skipped_with_its_line(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged: str, fault: str
) -> None:
    monkeypatch.setattr(tail_lines, "LINE_LIMIT", 300_000)
    root = capability_project(tmp_path)
    (root / "history").mkdir()
    lines = [legacy_line(0, 0.25), legacy_line(1, 0.75), damaged]
    (root / "history" / "history.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("eval", "run", "--history-dir", "history", "--summary", "s.md", cwd=root)
    assert result.returncode == 0, result.stderr
    [warning] = [line for line in result.stderr.splitlines() if "history.jsonl" in line]
    assert warning.startswith("zeroclaw eval: history/history.jsonl, line 3: ")
    assert fault in warning and "skipped" in warning
    assert chart_values((root / "s.md").read_text("utf-8")) == [25.0, 75.0, 50.0]
    assert len(list((root / "history" / "evals-capability").glob("*.json"))) == 1


def test_eval_report_with_a_damaged_history_warns_and_writes_the_page(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = capability_project(tmp_path)
    history = root / "history"
    history_store.write(history, past_entry(1, True, False))
    bad = damaged_at(history, 2, DAMAGE["deep nesting"][0].encode())
    assert run_cli("eval", "run", "--json-report", "r.json", cwd=root).returncode == 0
    args = ("eval", "report", "--report", "r.json", "--html", "r.html", "--history-dir", "history")
    result = run_cli(*args, cwd=root)
    assert result.returncode == 0, result.stderr
    [warning] = [line for line in result.stderr.splitlines() if bad.name in line]
    assert "nested" in warning
    page = (root / "r.html").read_text("utf-8")
    assert "Pass rate over the last 2 run(s)" in page


def test_a_damaged_entry_cannot_forge_a_runner_command_in_its_warning(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = capability_project(tmp_path)
    # The receipt's policy kind is one of a few words: the fault quotes the value found.
    receipt = SuiteReceipt(
        harness_version="0",
        agent="openai-agents",
        framework=None,
        framework_version=None,
        provider="scripted",
        python="3",
        git_commit=None,
        git_dirty=None,
        policy=policy_of("capability"),
    )
    text = history_store.encode(msgspec.structs.replace(past_entry(2, True), receipt=receipt))
    forged = text.decode().replace('"kind": "capability"', '"kind": "\\n::error::x ##[error]y"')
    bad = damaged_at(root / "history", 2, forged.encode())
    result = run_cli("eval", "run", "--history-dir", "history", cwd=root)
    assert result.returncode == 0, result.stderr
    [warning] = [line for line in result.stderr.splitlines() if bad.name in line]
    assert "$.receipt.policy.kind" in warning
    assert not [line for line in result.stderr.splitlines() if line.lstrip().startswith("::")]
    assert "##[" not in result.stderr


# --- what a run reads -----------------------------------------------------------------------


def test_a_run_reads_only_the_entries_it_shows_each_once(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = capability_project(tmp_path)
    history = root / "history"
    damaged_at(history, 0, DAMAGE["deep nesting"][0].encode())  # the oldest: never shown
    for day in range(1, 121):
        history_store.write(history, past_entry(day, True, day % 2 == 0))
    read: list[str] = []
    real = os.open

    def counted(path: Any, flags: int, *args: Any, **options: Any) -> int:
        if "evals-capability/" in str(path):  # the suite's entries, by their whole path
            read.append(str(path))
        return real(path, flags, *args, **options)

    monkeypatch.setattr(os, "open", counted)
    args = ("eval", "run", "--history-dir", "history", "--summary", "s.md", "--html", "r.html")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "step.md")}
    result = run_cli(*args, cwd=root, env=env)
    assert result.returncode == 0, result.stderr
    assert "skipped" not in result.stderr  # the damaged entry is outside every window
    assert len(read) == len(set(read))  # no entry is read twice
    assert len(read) <= 61  # the HTML report's 60 points at most, and this run's own
    html = (root / "r.html").read_text("utf-8")
    assert "Pass rate over the last 60 run(s)" in html
    assert chart_values((root / "s.md").read_text("utf-8")) == [100.0, 50.0] * 9 + [100.0, 50.0]
