"""The tool boundary: built-in tools, and a record of every dispatch."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness.builtin_tools import BUILTIN_TOOL_NAMES, builtin_tools, runs_commands
from harness.tool_registry import RecordedCall, Tool, ToolFailure, ToolRegistry, canonical_arguments

OBJECT = {"type": "object", "properties": {}}


def dispatch(registry: ToolRegistry, name: str, arguments: Any):
    return asyncio.run(registry.dispatch(name, arguments))


def builtins() -> ToolRegistry:
    return ToolRegistry.of(builtin_tools())


def only_call(registry: ToolRegistry) -> RecordedCall:
    assert len(registry.calls) == 1, registry.calls
    return registry.calls[0]


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


# --- fail and raising tools -----------------------------------------------------------------


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


def test_a_raising_tool_is_recorded_as_a_failure() -> None:
    def broken(arguments: dict) -> str:
        raise RuntimeError("kaboom")

    registry = ToolRegistry.of([Tool("broken", "raises", OBJECT, broken)])
    outcome = dispatch(registry, "broken", {"x": 1})
    assert outcome.success is False
    c = only_call(registry)
    assert c.success is False
    assert "kaboom" in c.result
    assert "RuntimeError" in c.result


def test_tool_failure_text_is_the_result() -> None:
    def refuses(arguments: dict) -> str:
        raise ToolFailure("not allowed here")

    registry = ToolRegistry.of([Tool("refuses", "fails", OBJECT, refuses)])
    dispatch(registry, "refuses", {})
    assert only_call(registry).result == "not allowed here"
    assert only_call(registry).success is False


def test_async_tools_are_awaited() -> None:
    async def slow_upper(arguments: dict) -> str:
        await asyncio.sleep(0)
        return str(arguments["text"]).upper()

    registry = ToolRegistry.of([Tool("upper", "upper-cases", OBJECT, slow_upper)])
    assert dispatch(registry, "upper", {"text": "abc"}).result == "ABC"
    assert only_call(registry).result == "ABC"


def test_an_empty_output_is_recorded_as_empty_not_invented() -> None:
    registry = ToolRegistry.of([Tool("quiet", "says nothing", OBJECT, lambda a: "")])
    outcome = dispatch(registry, "quiet", {})
    assert outcome == type(outcome)("", True)
    assert only_call(registry).result == ""
    assert only_call(registry).success is True


def test_a_failing_call_does_not_stop_later_calls() -> None:
    registry = builtins()
    dispatch(registry, "fail", {"reason": "first"})
    dispatch(registry, "echo", {"message": "second"})
    assert [(c.name, c.success) for c in registry.calls] == [("fail", False), ("echo", True)]


# --- arguments as recorded ------------------------------------------------------------------


def test_arguments_recorded_as_compact_sorted_json_with_non_ascii_kept() -> None:
    registry = builtins()
    dispatch(registry, "echo", {"zeta": 1, "message": "naïve café 日本語 ✓", "alpha": [1, 2]})
    recorded = only_call(registry).arguments
    assert recorded == '{"alpha":[1,2],"message":"naïve café 日本語 ✓","zeta":1}'
    assert only_call(registry).result == "naïve café 日本語 ✓"


def test_string_arguments_are_parsed_and_canonicalised() -> None:
    registry = builtins()
    raw = '{ "message" : "caf\\u00e9",\n  "b": {"y": 2, "x": 1} }'
    assert dispatch(registry, "echo", raw).result == "café"
    assert only_call(registry).arguments == '{"b":{"x":1,"y":2},"message":"café"}'


def test_blank_string_arguments_mean_no_arguments() -> None:
    registry = builtins()
    assert dispatch(registry, "echo", "").result == "(empty)"
    assert only_call(registry).arguments == "{}"
    assert only_call(registry).success is True


def test_invalid_json_arguments_are_recorded_raw_as_a_failure() -> None:
    registry = builtins()
    outcome = dispatch(registry, "echo", '{"message": oops')
    assert outcome.success is False
    c = only_call(registry)
    assert c.arguments == '{"message": oops'
    assert c.success is False
    assert "invalid JSON" in c.result


def test_non_object_arguments_fail() -> None:
    registry = builtins()
    outcome = dispatch(registry, "echo", "[1, 2]")
    assert outcome.success is False
    assert only_call(registry).arguments == "[1,2]"


def test_canonical_arguments() -> None:
    assert canonical_arguments({"b": "ü", "a": None}) == '{"a":null,"b":"ü"}'
    assert json.loads(canonical_arguments({"k": "\u2603"})) == {"k": "☃"}


# --- bookkeeping ----------------------------------------------------------------------------


def test_unknown_tool_is_recorded_as_a_failure() -> None:
    registry = builtins()
    outcome = dispatch(registry, "shell", {"cmd": "ls"})
    assert outcome.success is False
    c = only_call(registry)
    assert (c.name, c.success) == ("shell", False)
    assert "unknown tool" in c.result
    assert "shell" in c.result


def test_durations_are_non_negative() -> None:
    registry = builtins()
    dispatch(registry, "echo", {"message": "a"})
    dispatch(registry, "fail", {"reason": "b"})
    dispatch(registry, "nope", {})
    assert len(registry.calls) == 3
    assert all(c.duration_ms >= 0 for c in registry.calls)


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="echo"):
        ToolRegistry.of([*builtin_tools(), builtin_tools()[0]])


def test_registries_do_not_share_calls() -> None:
    first, second = builtins(), builtins()
    dispatch(first, "echo", {"message": "a"})
    assert len(first.calls) == 1
    assert second.calls == []


def test_record_appends_an_external_dispatch() -> None:
    registry = builtins()
    registry.record("mine", '{"a":1}', "ok", True, 2.5)
    assert registry.calls == [RecordedCall("mine", '{"a":1}', "ok", True, 2.5)]


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
