"""`harness.snapshots.store.unused`: snapshots no case of the suite uses (a fixture deleted
or renamed), as syrupy and Jest report theirs: said after a run of the whole suite (a warning
line naming each file in the terminal, the Markdown summary, the HTML report and the JSON
report, a warning annotation in CI), failing the gate only under `unused_snapshots = "fail"`,
removed (and listed) by `--update-snapshots` on a run of the whole suite, and never looked
for, nor removed, on a filtered run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, Cli
from test_reporters_github import runner_commands

SPEC = "openai-agents:agents_sdk:build_agent"
FOLDER = Path("evals/__snapshots__/openai-agents+agents_sdk+build_agent")
OTHER = Path("evals/__snapshots__/pydantic-ai+pydantic_agent+build_agent")
RUN = ("eval", "run", "--suite", "evals", "--agent", SPEC, "--jobs", "1")
GONE = "lookup_shipped_order"  # the fixture deleted
STALE = f"{FOLDER.as_posix()}/{GONE}.snap"


@pytest.fixture
def support(tmp_path: Path) -> Path:
    """The support agent example with one fixture deleted: its snapshot is left unused
    (the other agent setting's too, which this run cannot judge)."""
    copy = tmp_path / "support_agent"
    shutil.copytree(REPO / "examples" / "support_agent", copy)
    (copy / "evals" / f"{GONE}.json").unlink()
    assert (copy / STALE).is_file() and (copy / OTHER / f"{GONE}.snap").is_file()
    return copy


def configure(root: Path, setting: str) -> None:
    (root / "pyproject.toml").write_text(
        f"[tool.zeroclaw.eval]\nunused_snapshots = {setting}\n", "utf-8"
    )


def test_a_full_run_warns_naming_each_unused_snapshot(run_cli: Cli, support: Path) -> None:
    result = run_cli(*RUN, "--summary", "s.md", "--json-report", "r.json", "--html", "r.html",
                     cwd=support)  # fmt: skip
    assert result.returncode == 0, result.stdout  # a warning decides nothing
    warning = (
        "1 request snapshot(s) no case of the suite uses (a warning); remove them with "
        "--update-snapshots:"
    )
    assert f"  {warning}\n    {STALE}\n" in result.stdout
    assert f"{warning}\n  {STALE}" in (support / "s.md").read_text("utf-8")
    assert STALE in (support / "r.html").read_text("utf-8")
    said = json.loads((support / "r.json").read_text("utf-8"))["unused_snapshots"]
    assert said == {"files": [STALE], "removed": False, "fails": False}
    assert (support / STALE).is_file()  # a run never removes one of its own accord
    # The report is consistent with itself: `verify` derives the same gate from it.
    verified = run_cli("eval", "verify", "r.json", "--suite", "evals", cwd=support)
    assert "exit 0" in verified.stdout, verified.stdout


def test_in_ci_it_is_a_warning_annotation(run_cli: Cli, support: Path) -> None:
    result = run_cli(*RUN, cwd=support, env={"GITHUB_ACTIONS": "true", "CI": "true"})
    assert result.returncode == 0, result.stdout
    found = [c for c in runner_commands(result.stdout) if STALE in c.message]
    assert [c.name for c in found] == ["warning"]


def test_the_suites_setting_can_make_them_fail(run_cli: Cli, support: Path) -> None:
    configure(support, '{ "evals" = "fail" }')
    result = run_cli(*RUN, cwd=support, env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    assert "1 request snapshot(s) no case of the suite uses (failing the gate)" in result.stdout
    assert [c.name for c in runner_commands(result.stdout) if STALE in c.message] == ["error"]
    configure(support, '"warn"')
    assert run_cli(*RUN, cwd=support).returncode == 0


def test_a_bad_setting_is_refused_naming_the_key(run_cli: Cli, support: Path) -> None:
    configure(support, '"sometimes"')
    result = run_cli(*RUN, cwd=support)
    assert result.returncode != 0
    assert "unused_snapshots" in result.stderr + result.stdout


def test_update_on_a_full_run_removes_them_and_lists_them(run_cli: Cli, support: Path) -> None:
    configure(support, '"fail"')
    result = run_cli(*RUN, "--update-snapshots", cwd=support)
    assert result.returncode == 0, result.stdout
    assert (
        f"  1 unused request snapshot(s) removed (--update-snapshots):\n    {STALE}\n"
        in result.stdout
    )
    assert not (support / STALE).exists()
    assert (support / OTHER / f"{GONE}.snap").is_file()  # another agent setting's: kept
    again = run_cli(*RUN, cwd=support)
    assert again.returncode == 0 and "request snapshot(s)" not in again.stdout


@pytest.mark.parametrize(
    "picked",
    [
        ("--suite", "evals", "--case", "refund-delivered-order"),
        ("--suite", "evals", "-k", "refund"),
        ("--suite", "evals/refund_delivered_order.json"),
    ],
)
def test_a_filtered_run_neither_says_nor_removes_them(
    run_cli: Cli, support: Path, picked: tuple[str, ...]
) -> None:
    configure(support, '"fail"')
    args = ("eval", "run", "--agent", SPEC, "--jobs", "1", *picked, "--update-snapshots")
    result = run_cli(*args, cwd=support)
    assert result.returncode == 0, result.stdout
    assert "request snapshot(s)" not in result.stdout
    assert (support / STALE).is_file()


def test_a_folder_named_as_a_snapshot_is_none_but_a_link_to_one_is(tmp_path: Path) -> None:
    from harness.snapshots.store import plan_for, unused

    suite = tmp_path / "evals"
    suite.mkdir()
    plan = plan_for("auto", "regression", "loop:factory", update=False)
    assert plan is not None
    folder = plan.path_of(suite / "x.json").parent
    folder.mkdir(parents=True)
    (folder / "kept.snap").write_text("used", "utf-8")
    (folder / "gone.snap").write_text("a deleted fixture's", "utf-8")
    (folder / "odd.snap").mkdir()
    (folder / "linked.snap").symlink_to(folder / "odd.snap")
    (folder / "notes.txt").write_text("not a snapshot", "utf-8")
    found = unused(plan, suite, ["kept.json", "other.json"])
    assert found == [folder / "gone.snap", folder / "linked.snap"]
    assert unused(plan, tmp_path / "nowhere", ["kept.json"]) == []


@pytest.mark.parametrize(
    "names",
    [
        ["kept.json", "twice.json.json", ".json"],  # a listed suite's: all end in .json
        ["kept.json", "plain", "dotted.name", "twice.json.json", ".json"],
        ["kept.JSON", "kept.json"],
    ],
)
def test_each_fixture_name_uses_the_snapshot_its_stem_names(
    tmp_path: Path, names: list[str]
) -> None:
    from harness.snapshots.store import plan_for, unused

    suite = tmp_path / "evals"
    plan = plan_for("auto", "regression", "loop:factory", update=False)
    assert plan is not None
    folder = plan.path_of(suite / "x.json").parent
    folder.mkdir(parents=True)
    stems = {"kept", "twice.json", "", "plain", "dotted"}
    for stem in [*stems, "gone", "kept.JSON", "twice"]:
        (folder / f"{stem}.snap").write_text("a snapshot", "utf-8")
    uses = {name[:-5] if name.endswith(".json") else Path(name).stem for name in names}
    expected = sorted(folder / f"{stem}.snap" for stem in [*stems, "gone", "kept.JSON", "twice"])
    assert unused(plan, suite, names) == [p for p in expected if p.name[:-5] not in uses]
