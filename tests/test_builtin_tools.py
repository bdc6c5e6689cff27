"""`harness.builtin_toolset`: the built-in `echo` and `fail` tools and the workspace file
tools' surface, and which tool names run commands."""

from __future__ import annotations

import pytest
from conftest import builtins, dispatch, only_call

from harness.builtin_toolset import BUILTIN_TOOL_NAMES, builtin_tools, runs_commands
from harness.tool_registry import RecordedCall

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
    "name", ["echo", "execute_query", "get_command_status", "lookup_order", "executive_summary"]
)
def test_ordinary_domain_tool_names_are_not_mistaken_for_command_tools(name: str) -> None:
    assert not runs_commands(name)
