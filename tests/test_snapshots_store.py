"""`harness.snapshots.store`: request snapshots beside the suite. A change to what an agent
shows its model (its instructions, a tool's description, a parameter of a tool's schema)
fails its regression suite with a diff naming that change, `--update-snapshots` takes it,
and a run never writes a snapshot otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, Cli, echo_fixture, write_module, write_suite

from harness import run_suite
from harness.model_types import RequestCheck
from harness.pipeline import RunOptions, run
from harness.snapshots.store import SnapshotPlan, unified_diff

SUPPORT = REPO / "examples" / "support_agent"
SDK_SPEC = "openai-agents:agents_sdk:build_agent"
SNAPSHOTS = Path("evals/__snapshots__/openai-agents+agents_sdk+build_agent")


@pytest.fixture
def support(tmp_path: Path) -> Path:
    """A copy of the support agent example, its committed snapshots included."""
    copy = tmp_path / "support_agent"
    shutil.copytree(SUPPORT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")


CHANGES = {
    "instructions": (
        "support_orders.py",
        "Never invent order details.",
        "Never invent order details. Talk like a pirate.",
    ),
    "tool description": (
        "agents_sdk.py",
        "Refund an order that has shipped or been delivered.",
        "Refund any order.",
    ),
    "schema parameter": (
        "agents_sdk.py",
        "reason: Why the customer wants a refund.",
        "reason: The refund's reason, in one word.",
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_agent_fails_with_the_diff_of_that_change_until_updated(
    run_cli: Cli, support: Path, change: str
) -> None:
    file, old, new = CHANGES[change]
    run_args = ("eval", "run", "--suite", "evals", "--agent", SDK_SPEC, "--jobs", "1")
    assert run_cli(*run_args, cwd=support).returncode == 0  # the committed snapshots hold
    edit(support / file, old, new)
    before = {p: p.read_text("utf-8") for p in (support / SNAPSHOTS).iterdir()}

    failed = run_cli(*run_args, cwd=support)
    assert failed.returncode == 1
    assert "request_snapshot: what the agent shows the model changed" in failed.stdout
    removed = [line for line in failed.stdout.splitlines() if line.strip().startswith("-")]
    added = [line for line in failed.stdout.splitlines() if line.strip().startswith("+")]
    said_old = old.split(": ", 1)[-1]
    said_new = new.split(": ", 1)[-1]
    assert any(said_old in line for line in removed), failed.stdout
    assert any(said_new in line for line in added), failed.stdout
    if change != "instructions":  # the hunk names the tool whose definition changed
        assert "--- tool: refund_order" in failed.stdout
    # A run never writes a snapshot of its own accord.
    assert {p: p.read_text("utf-8") for p in (support / SNAPSHOTS).iterdir()} == before

    assert run_cli(*run_args, "--update-snapshots", cwd=support).returncode == 0
    changed = [p for p, text in before.items() if p.read_text("utf-8") != text]
    assert changed and all(said_new in p.read_text("utf-8") for p in changed)
    assert run_cli(*run_args, cwd=support).returncode == 0


def test_in_ci_a_missing_snapshot_fails_and_outside_it_nothing_is_written(
    run_cli: Cli, support: Path
) -> None:
    shutil.rmtree(support / "evals" / "__snapshots__")
    run_args = ("eval", "run", "--suite", "evals", "--agent", SDK_SPEC, "--jobs", "1")
    quiet = run_cli(*run_args, cwd=support)
    assert quiet.returncode == 0 and not (support / "evals" / "__snapshots__").exists()
    ci = run_cli(*run_args, cwd=support, env={"CI": "true"})
    assert ci.returncode == 1
    assert "no request snapshot evals/__snapshots__/openai-agents+agents_sdk+build_agent/" in (
        ci.stdout
    )
    assert "CI=true: a missing snapshot fails" in ci.stdout


def test_a_capability_suite_warns_and_the_setting_turns_the_check_off_or_into_a_warning(
    run_cli: Cli, support: Path
) -> None:
    edit(support / "support_orders.py", "Never invent", "Always invent")
    base = ("eval", "run", "--suite", "evals", "--agent", SDK_SPEC, "--jobs", "1")
    warned = run_cli(*base, "--suite-kind", "capability", cwd=support)
    assert warned.returncode == 0
    assert "request_snapshot (warning): what the agent shows the model changed (warning)" in (
        warned.stdout
    )
    assert run_cli(*base, "--snapshots", "off", cwd=support).returncode == 0
    assert run_cli(*base, "--snapshots", "warn", cwd=support).returncode == 0
    assert run_cli(*base, cwd=support).returncode == 1
    # Per suite, from the configuration: this suite's setting, and no other's.
    (support / "pyproject.toml").write_text(
        '[tool.zeroclaw.eval.snapshots]\n"evals" = "off"\n', "utf-8"
    )
    assert run_cli(*base, cwd=support).returncode == 0
    (support / "pyproject.toml").write_text(
        '[tool.zeroclaw.eval.snapshots]\n"other/evals" = "off"\n', "utf-8"
    )
    assert run_cli(*base, cwd=support).returncode == 1


# An own loop whose system prompt a file beside it decides: the loop's code changing
# between the run that took the snapshots and the next.
SILENT_LOOP = """
from pathlib import Path

from harness import Message, ModelRequest, ToolSchema

PROMPT = Path(__file__).with_name("prompt.txt")


class Loop:
    def __init__(self, ctx):
        self.ctx = ctx
        self.messages = []
        self.tools = tuple(
            ToolSchema(t.name, t.description, t.parameters) for t in ctx.tools.tools.values()
        )

    async def run_turn(self, user_input):
        prompt = PROMPT.read_text()
        head = (Message(role="system", content=prompt),) if prompt else ()
        self.messages.append(Message(role="user", content=user_input))
        while True:
            request = ModelRequest(messages=head + tuple(self.messages), tools=self.tools)
            step = await self.ctx.model.respond(request)
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                outcome = await self.ctx.tools.dispatch(call.name, call.arguments)
                self.messages.append(
                    Message(role="tool", content=outcome.result, tool_call_id=call.id)
                )


def make(ctx):
    return Loop(ctx)
"""


def _own_loop_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, name: str
) -> tuple[Path, str]:
    """A copy of the regression suite, and the agent spec of the loop `source` (a module
    `name` importable from `tmp_path`)."""
    suite = tmp_path / "evals" / "regression"
    shutil.copytree(REPO / "evals" / "regression", suite, ignore=shutil.ignore_patterns("__*"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return suite, f"{write_module(tmp_path, source, name)}:make"


def test_an_own_loop_that_stops_sending_its_system_prompt_fails_the_regression_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, spec = _own_loop_suite(tmp_path, monkeypatch, SILENT_LOOP, "silent_loop")
    (tmp_path / "prompt.txt").write_text("You are a careful echo agent.", "utf-8")

    def gate(update: bool = False) -> list[tuple[str, list[str]]]:
        options = RunOptions(suite, spec, root=tmp_path, update_snapshots=update)
        report = run(options)
        return [(c.id, [g.check for g in c.failing_grades]) for c in report.cases if not c.passed]

    assert gate(update=True) == []  # snapshots taken with the correct loop
    assert gate() == []
    (tmp_path / "prompt.txt").write_text("", "utf-8")  # the loop stops sending it
    failing = gate()
    assert failing and all(checks == ["request_snapshot"] for _, checks in failing)
    # Every case that makes a request, not one: the snapshot is per case.
    assert len(failing) >= 15


def test_snapshots_are_kept_per_agent_setting(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "evals" / "regression", {"echo.json": echo_fixture("e")})
    for agent in ("openai-agents", "pydantic-ai"):
        run(RunOptions(suite, agent, root=tmp_path, update_snapshots=True))
    folders = sorted(p.name for p in (suite / "__snapshots__").iterdir())
    assert folders == ["openai-agents", "pydantic-ai"]
    assert [p.name for p in (suite / "__snapshots__" / "pydantic-ai").iterdir()] == ["echo.snap"]
    # Each run checks its own agent's snapshot, never another's.
    theirs = suite / "__snapshots__" / "pydantic-ai" / "echo.snap"
    theirs.write_text(theirs.read_text("utf-8") + "--- tool: gone\n", "utf-8")
    assert run_suite(suite, agent="openai-agents").all_passed
    (case,) = run_suite(suite, agent="pydantic-ai").cases
    assert [g.check for g in case.failing_grades] == ["request_snapshot"]
    assert "---- tool: gone" in case.failing_grades[0].detail


def test_the_folder_of_an_agent_setting_is_a_plain_name() -> None:
    assert SnapshotPlan("openai-agents:app.agents:build").folder == "openai-agents+app.agents+build"
    assert SnapshotPlan("../x").folder == "x"


def test_the_diff_names_the_heading_of_its_change_and_is_made_safe() -> None:
    kept = "=== agent: a\n--- tool: t\ndescription: one\nparameters: {\n  1\n  2\n  3\n}\n"
    now = kept.replace("  3", "  \x1b[31mthree")
    diff = unified_diff(kept, now, "s.snap")
    assert "@@ -5,4 +5,4 @@ === agent: a / --- tool: t" in diff
    assert "\x1b" not in diff and "+  \\u001b[31mthree" in diff


def test_a_snapshot_missing_says_nothing_and_one_that_cannot_be_read_fails(
    tmp_path: Path,
) -> None:
    from harness.snapshots.store import SnapshotPlan, check

    plan = SnapshotPlan("loop:factory")
    fixture = tmp_path / "case.json"
    path = plan.path_of(fixture)
    assert check(plan, fixture, "text", tmp_path) is None  # none taken yet, not in CI
    path.parent.mkdir(parents=True)
    path.symlink_to(tmp_path / "gone.snap")  # a dangling link is not a missing snapshot
    dangling = check(plan, fixture, "text", tmp_path)
    assert dangling is not None and "cannot read" in dangling.detail
    path.unlink()
    path.mkdir()
    directory = check(plan, fixture, "text", tmp_path)
    assert directory is not None and "not a regular file (directory)" in directory.detail
    path.rmdir()
    path.write_text("text", "utf-8")
    assert check(plan, fixture, "text", tmp_path) is None
    assert check(plan, fixture, "other", tmp_path) is not None


def test_a_snapshot_is_read_as_it_is_now_whatever_its_folder_held_when_first_listed(
    tmp_path: Path,
) -> None:
    """A plan lists each snapshot folder once (to read each snapshot without asking its
    type first): a snapshot changed, removed, replaced or taken since is still seen as it
    is when its case is checked."""
    import dataclasses
    import pickle

    from harness.snapshots.store import check

    plan = SnapshotPlan("loop:factory")
    first, second, later = (tmp_path / f"{name}.json" for name in ("a", "b", "c"))
    folder = plan.path_of(first).parent
    folder.mkdir(parents=True)
    for fixture in (first, second):
        plan.path_of(fixture).write_text("one", "utf-8")
    assert check(plan, first, "one", tmp_path) is None  # the folder listed now
    assert plan._where(second) == (str(plan.path_of(second)), True)

    plan.path_of(second).write_text("two", "utf-8")
    changed = check(plan, second, "one", tmp_path)
    assert changed is not None and "changed since" in changed.detail
    assert check(plan, second, "two", tmp_path) is None

    plan.path_of(later).write_text("three", "utf-8")  # taken after the listing
    assert check(plan, later, "three", tmp_path) is None
    assert check(plan, later, "four", tmp_path) is not None

    plan.path_of(second).unlink()
    assert check(plan, second, "two", tmp_path) is None  # missing, outside CI
    in_ci = dataclasses.replace(plan, ci=True)
    assert check(in_ci, first, "one", tmp_path) is None
    plan.path_of(first).unlink()
    missing = check(in_ci, first, "one", tmp_path)
    assert missing is not None and missing.detail.startswith("no request snapshot")

    plan.path_of(second).mkdir()
    directory = check(plan, second, "two", tmp_path)
    assert directory is not None and "not a regular file (directory)" in directory.detail
    plan.path_of(second).rmdir()
    os.mkfifo(plan.path_of(second))  # opened without blocking, refused as it is
    fifo = check(plan, second, "two", tmp_path)
    assert fifo is not None and "not a regular file (FIFO)" in fifo.detail
    # A run that asked its model nothing renders nothing, which a FIFO reads as too:
    # still refused as what it is.
    nothing = check(plan, second, "", tmp_path)
    assert nothing is not None and "not a regular file (FIFO)" in nothing.detail

    # The listing stays with the process that made it.
    copied = pickle.loads(pickle.dumps(plan))
    assert copied == plan and "_listed" not in vars(copied) and "_listed" in vars(plan)


def test_a_folder_s_listing_is_held_as_eight_bytes_a_snapshot(tmp_path: Path) -> None:
    # The listing lasts the whole run: as a set of names it held 5 MB at 50,000 snapshots.
    from harness.snapshots import store

    folder = tmp_path / "snaps"
    folder.mkdir()
    names = [f"case_{n:06d}.snap" for n in range(300)]
    for name in names:
        (folder / name).write_text("x", encoding="utf-8")
    (folder / "a_folder.snap").mkdir()  # not a regular file: not listed
    listed = store._regular_files(str(folder))
    assert listed.itemsize == 8 and len(listed) == len(names)
    assert all(store._holds(listed, name) for name in names)
    assert not store._holds(listed, "a_folder.snap")
    assert not store._holds(listed, "case_000300.snap")
    assert len(store._regular_files(str(tmp_path / "nowhere"))) == 0


def test_a_matching_snapshot_over_the_cap_is_refused_as_its_read_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.snapshots import store

    monkeypatch.setattr(store, "MAX_SNAPSHOT_BYTES", 10)
    plan = SnapshotPlan("loop:factory")
    fixture = tmp_path / "case.json"
    plan.path_of(fixture).parent.mkdir(parents=True)
    plan.path_of(fixture).write_text("x" * 41, "utf-8")
    grade = store.check(plan, fixture, "x" * 41, tmp_path)
    assert grade is not None and "exceeds" in grade.detail


MIXED_KEYS_LOOP = SILENT_LOOP.replace(
    "ToolSchema(t.name, t.description, t.parameters)",
    "ToolSchema(t.name, t.description, {**t.parameters, 1: 'one'})",
).replace("PROMPT.read_text()", '"You are a careful echo agent."')


def test_a_tool_schema_no_json_can_show_is_the_agents_run_error_naming_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mapping whose keys mix str and int: json cannot sort them. The agent's provider
    # would refuse such a request; the case says so, naming the tool, not "internal error".
    # The model boundary refuses it first (a key that is no text); past it (an adapter's
    # request, which the boundary checks alike), the snapshot says so itself.
    suite, spec = _own_loop_suite(tmp_path, monkeypatch, MIXED_KEYS_LOOP, "mixed_keys_loop")
    first = run(RunOptions(suite, spec, root=tmp_path)).cases[0].error
    assert first == (
        "the agent's model request in turn 0 offers tools[0] whose parameters hold a key "
        "that is int, not text"
    )
    monkeypatch.setattr(RequestCheck, "problem", lambda self, request: None)
    for update in (True, False):
        report = run(RunOptions(suite, spec, root=tmp_path, update_snapshots=update))
        errors = {c.error for c in report.cases}
        assert len(report.cases) > 1 and None not in errors
        for error in errors:
            assert error is not None and not error.startswith("internal error")
            assert error.startswith("the agent's request to its model cannot be shown as JSON")
            assert "tool 'echo': parameters: TypeError: '<' not supported" in error
