"""`harness.builtin_toolset`: the built-in `echo` and `fail` tools, the workspace file
tools on real files (hard links, symlinks, FIFOs, devices, and directories swapped between
a check and an open), and which tool names run commands."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import builtins, dispatch, only_call

import harness.builtin_toolset as toolset
import harness.workspace as workspace
from harness.builtin_toolset import BUILTIN_TOOL_NAMES, builtin_tools, runs_commands
from harness.tool_registry import RecordedCall, ToolOutcome, ToolRegistry

# --- the built-in tools ---------------------------------------------------------------------------


def test_builtin_tools_are_echo_fail_and_the_workspace_tools() -> None:
    assert (
        {t.name for t in builtin_tools()}
        == {"echo", "fail", "read_file", "write_file", "list_files"}
        == set(BUILTIN_TOOL_NAMES)
    )
    for tool in builtin_tools():
        assert tool.parameters["type"] == "object"
        assert tool.description


# --- echo -----------------------------------------------------------------------------------


def test_echo_returns_the_message() -> None:
    registry = builtins()
    outcome = dispatch(registry, "echo", {"message": "hello"})
    assert (outcome.result, outcome.success) == ("hello", True)
    c = only_call(registry)
    assert c == RecordedCall("echo", '{"message":"hello"}', "hello", True, c.duration_ms)


@pytest.mark.parametrize(
    "arguments",
    [{}, {"wrong_key": "hello"}, {"message": 42}, {"message": None}, {"message": ["a"]}],
    ids=["missing", "wrong-key", "number", "null", "list"],
)
def test_echo_without_a_string_message_returns_empty_marker(arguments: dict) -> None:
    registry = builtins()
    outcome = dispatch(registry, "echo", arguments)
    assert outcome.result == "(empty)"
    assert outcome.success is True
    assert only_call(registry).success is True


def test_echo_of_empty_string_is_recorded_as_empty() -> None:
    registry = builtins()
    assert dispatch(registry, "echo", {"message": ""}).result == ""
    assert only_call(registry).result == ""


# --- fail ----------------------------------------------------------------------------------------


def test_fail_records_failure_with_its_reason() -> None:
    registry = builtins()
    outcome = dispatch(registry, "fail", {"reason": "disk full"})
    assert (outcome.result, outcome.success) == ("disk full", False)
    c = only_call(registry)
    assert (c.name, c.arguments, c.result, c.success) == (
        "fail",
        '{"reason":"disk full"}',
        "disk full",
        False,
    )


def test_fail_without_reason_still_fails_with_text() -> None:
    registry = builtins()
    outcome = dispatch(registry, "fail", {})
    assert outcome.success is False
    assert outcome.result


# --- command-running tool names -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["shell", "Bash", "run_command", "exec_python", "my_shell_tool", "execute_command", "cmd"],
)
def test_command_running_tool_names_are_recognised(name: str) -> None:
    assert runs_commands(name)


@pytest.mark.parametrize(
    "name",
    [
        # What the documentation always said was refused, and the code admitted.
        "exec_sql",
        "python_exec",
        "command_runner",
        # Any spelling of the same words.
        "execSql",
        "Run-Code",
        "run script",
        "spawn.process",
        "PowerShell",
        "sh",
        # Refused by design: the rule cannot tell these from a way to run programs.
        "execute_query",
        "get_command_status",
        "executive_summary",
    ],
)
def test_every_name_the_stated_rule_covers_is_refused(name: str) -> None:
    assert runs_commands(name)


@pytest.mark.parametrize(
    "name",
    [
        *sorted(BUILTIN_TOOL_NAMES),
        "lookup_order",
        "refund_order",
        "get_weather",
        "search_docs",
        "shop",
    ],
)
def test_ordinary_domain_tool_names_are_not_mistaken_for_command_tools(name: str) -> None:
    assert not runs_commands(name)


def test_the_refusal_states_the_rule() -> None:
    assert toolset.COMMAND_TOOL_RULE in toolset.COMMAND_TOOL_REFUSAL
    for word in re.findall(r"`([^`]+)`", toolset.COMMAND_TOOL_RULE.split("it is", 1)[1]):
        assert runs_commands(word), word


@pytest.mark.parametrize("document", ["README.md", "evals/README.md", "docs/agents.md"])
def test_the_documentation_states_the_rule_word_for_word(document: str) -> None:
    text = (Path(__file__).resolve().parent.parent / document).read_text(encoding="utf-8")
    assert " ".join(toolset.COMMAND_TOOL_RULE.split()) in " ".join(text.split())


# --- the file tools on real files -----------------------------------------------------------

SECRET = "outside: must never be read or changed"


@dataclass
class Files:
    """A workspace directory, a directory outside it holding `secret.txt`, and the file
    tools over the workspace."""

    root: Path
    outside: Path
    registry: ToolRegistry

    @property
    def secret(self) -> Path:
        return self.outside / "secret.txt"

    def call(self, tool: str, **arguments: str) -> ToolOutcome:
        return dispatch(self.registry, tool, arguments)

    def outside_state(self) -> list[tuple[str, str | None]]:
        return [
            (p.name, p.read_text(encoding="utf-8") if p.is_file() else None)
            for p in sorted(self.outside.rglob("*"))
        ]


@pytest.fixture
def files(tmp_path: Path) -> Files:
    root = tmp_path / "workspace"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    return Files(root, outside, ToolRegistry.of(toolset.workspace_tools(lambda: root)))


def assert_untouched(files: Files, before: list[tuple[str, str | None]]) -> None:
    assert files.secret.read_text(encoding="utf-8") == SECRET
    assert files.outside_state() == before


def test_ordinary_files_are_written_replaced_read_and_listed(files: Files) -> None:
    assert files.call("write_file", path="a/b/c.txt", content="long first text") == ToolOutcome(
        "wrote 15 bytes to a/b/c.txt", True
    )
    assert files.call("write_file", path="a/b/c.txt", content="short").success
    assert (files.root / "a/b/c.txt").read_text(encoding="utf-8") == "short"
    assert files.call("read_file", path="./a//b/c.txt") == ToolOutcome("short", True)
    assert files.call("write_file", path="top.txt", content="t").success
    assert files.call("list_files") == ToolOutcome("a/b/c.txt\ntop.txt", True)
    assert files.call("list_files", path="a/") == ToolOutcome("a/b/c.txt", True)
    assert files.call("read_file", path="a") == ToolOutcome("no such file: a", False)
    assert files.call("read_file", path="nope.txt") == ToolOutcome("no such file: nope.txt", False)
    assert files.call("write_file", path="a/b", content="x") == ToolOutcome(
        "a/b is a directory", False
    )
    assert files.call("list_files", path="top.txt") == ToolOutcome(
        "no such directory: top.txt", False
    )


def test_a_write_below_a_file_fails_without_naming_a_machine_path(files: Files) -> None:
    (files.root / "plain.txt").write_text("p", encoding="utf-8")
    outcome = files.call("write_file", path="plain.txt/inner.txt", content="x")
    assert outcome == ToolOutcome(
        "cannot write plain.txt/inner.txt: a parent is not a directory", False
    )


@pytest.mark.parametrize("tool", ["write_file", "read_file"])
def test_a_hard_link_to_an_outside_file_is_refused(files: Files, tool: str) -> None:
    os.link(files.secret, files.root / "planted.txt")
    before = files.outside_state()
    outcome = files.call(tool, path="planted.txt", content="pwned")
    assert outcome.success is False
    assert outcome.result == (
        "refused 'planted.txt': the file has 2 hard links, and the file tools touch only a "
        "file with one"
    )
    assert SECRET not in outcome.result
    assert_untouched(files, before)


@pytest.mark.parametrize("tool", ["write_file", "read_file"])
def test_a_symlink_that_stays_inside_is_not_followed_either(files: Files, tool: str) -> None:
    (files.root / "real.txt").write_text("real", encoding="utf-8")
    (files.root / "alias.txt").symlink_to("real.txt")
    (files.root / "dir").mkdir()
    (files.root / "alias_dir").symlink_to("dir", target_is_directory=True)
    for path in ("alias.txt", "alias_dir/new.txt"):
        outcome = files.call(tool, path=path, content="changed")
        shown = path.split("/")[0]
        assert outcome == ToolOutcome(
            f"refused {path!r}: {shown!r} is a symlink, and the file tools never follow one",
            False,
        )
    assert (files.root / "real.txt").read_text(encoding="utf-8") == "real"
    assert list((files.root / "dir").iterdir()) == []


def test_a_dangling_symlink_is_refused_not_created_through(files: Files) -> None:
    (files.root / "dangling.txt").symlink_to("target.txt")
    outcome = files.call("write_file", path="dangling.txt", content="x")
    assert outcome.success is False
    assert "'dangling.txt' is a symlink" in outcome.result
    assert not (files.root / "target.txt").exists()


def test_a_fifo_is_refused_and_never_written_into(files: Files) -> None:
    fifo = files.root / "pipe"
    os.mkfifo(fifo)
    # A reader is waiting, so an open for writing would succeed at once: only the type
    # check keeps the text out of the pipe.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        for tool in ("write_file", "read_file"):
            outcome = files.call(tool, path="pipe", content="into the pipe")
            assert outcome == ToolOutcome("refused 'pipe': not a regular file", False)
        try:
            leaked = os.read(reader, 100)
        except BlockingIOError:  # a writer still holds the pipe open, having written nothing
            leaked = b""
        assert leaked == b""
    finally:
        os.close(reader)


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_device_is_refused_without_being_opened(files: Files) -> None:
    os.mknod(files.root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    for tool in ("write_file", "read_file"):
        outcome = files.call(tool, path="null", content="x")
        assert outcome == ToolOutcome("refused 'null': not a regular file", False)


# --- a directory swapped for a symlink to the outside between the check and the open --------


def swap_for_symlink(directory: Path, target: Path) -> None:
    """What a racing process does: move `directory` aside (it stays inside the workspace)
    and put a symlink to `target` in its place."""
    directory.rename(directory.with_name(directory.name + "-moved"))
    directory.symlink_to(target, target_is_directory=True)


@pytest.fixture
def after_the_check(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], None]], list[str]]:
    """Runs an action once, right after a file tool's path check has passed."""

    def install(action: Callable[[], None]) -> list[str]:
        done: list[str] = []
        real = workspace.resolve_inside

        def checked(root: Path, relative: str) -> Path:
            found = real(root, relative)
            if not done:
                action()
                done.append(relative)
            return found

        monkeypatch.setattr(workspace, "resolve_inside", checked)
        # The tools module held its own reference once; patched too wherever it still does.
        monkeypatch.setattr(toolset, "resolve_inside", checked, raising=False)
        return done

    return install


@pytest.mark.parametrize("tool", ["write_file", "read_file"])
def test_a_parent_swapped_after_the_check_does_not_redirect(
    files: Files, after_the_check: Callable[[Callable[[], None]], list[str]], tool: str
) -> None:
    (files.root / "sub").mkdir()
    (files.root / "sub/secret.txt").write_text("inside", encoding="utf-8")
    done = after_the_check(lambda: swap_for_symlink(files.root / "sub", files.outside))
    before = files.outside_state()
    outcome = files.call(tool, path="sub/secret.txt", content="pwned")
    assert done == ["sub/secret.txt"]
    assert outcome == ToolOutcome(
        "refused 'sub/secret.txt': 'sub' is a symlink, and the file tools never follow one", False
    )
    assert_untouched(files, before)


def test_a_directory_swapped_right_after_the_write_created_it_does_not_redirect(
    files: Files, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)
        if not created:
            created.append(os.fspath(path))
            swap_for_symlink(files.root / "new", files.outside)

    monkeypatch.setattr(os, "mkdir", mkdir)
    before = files.outside_state()
    outcome = files.call("write_file", path="new/deeper/x.txt", content="pwned")
    assert [Path(p).name for p in created] == ["new"]
    assert outcome.success is False
    assert "'new' is a symlink" in outcome.result
    assert_untouched(files, before)


def test_a_parent_swapped_while_the_file_is_opened_keeps_the_write_inside(
    files: Files, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files.root / "sub").mkdir()
    swapped: list[str] = []
    real_open = os.open

    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.fspath(path).endswith("x.txt") and not swapped:
            swapped.append(os.fspath(path))
            swap_for_symlink(files.root / "sub", files.outside)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_)
    before = files.outside_state()
    outcome = files.call("write_file", path="sub/x.txt", content="kept inside")
    assert swapped
    # The walk holds the directory it checked, wherever it has been moved to.
    assert outcome == ToolOutcome("wrote 11 bytes to sub/x.txt", True)
    assert (files.root / "sub-moved/x.txt").read_text(encoding="utf-8") == "kept inside"
    assert_untouched(files, before)


def test_listing_never_descends_through_a_symlink(files: Files) -> None:
    (files.root / "in.txt").write_text("i", encoding="utf-8")
    (files.root / "out").symlink_to(files.outside, target_is_directory=True)
    assert files.call("list_files") == ToolOutcome("in.txt", True)
