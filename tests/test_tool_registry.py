"""`harness.tool_registry`: the tool boundary: every dispatch recorded, arguments as
canonical JSON, failures and raising tools as failed calls."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Any

import pytest
from conftest import builtins, dispatch, only_call

from harness.builtin_toolset import builtin_tools
from harness.tool_registry import (
    Dispatch,
    RecordedCall,
    Tool,
    ToolFailure,
    ToolOutcome,
    ToolRegistry,
    canonical_arguments,
)

OBJECT = {"type": "object", "properties": {}}


# --- raising tools --------------------------------------------------------------------------------


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


def test_a_deadline_cancelling_a_tool_is_no_failure_of_the_tool() -> None:
    async def hangs(arguments: dict) -> str:
        await asyncio.Event().wait()
        return "never"

    registry = ToolRegistry.of([Tool("hangs", "never answers", OBJECT, hangs)])

    async def bounded() -> None:
        await asyncio.wait_for(registry.dispatch("hangs", {}), 0.01)

    with pytest.raises(TimeoutError):  # the cancellation went through, not an outcome
        asyncio.run(bounded())
    assert all(not call.result.startswith("hangs raised") for call in registry.calls)


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


class _Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"message": "hello", "count": 2, "on": True, "off": None},
        {"z": [1, "a", [None, {"y": False}]], "A": {"b": 2, "B": "é\u2028😀"}},
        {"controls": "".join(map(chr, range(32))) + '\x7f"\\/', "": 10**40},
        {"float": 0.00001, "nan": float("nan"), "inf": float("inf")},
        {"tuple": (1, 2), "level": _Level.LOW, "text": type("Text", (str,), {})("t")},
        {2: "int keys", 1: "spelt as text"},
        {"surrogate": "\ud800"},
        [3, 1, 2],
        "text",
    ],
)
def test_canonical_arguments_are_spelt_as_json_spells_them(arguments: object) -> None:
    # However it is made, the recorded form is the one `json` gives these options: graders,
    # reports and baselines compare it with what earlier runs recorded.
    spelt = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_arguments(arguments) == spelt


@pytest.mark.parametrize("arguments", [{"set": {1}}, {"bytes": b"x"}, {1: "a", "b": 2}])
def test_canonical_arguments_refuse_what_json_refuses(arguments: object) -> None:
    with pytest.raises(TypeError):
        json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with pytest.raises(TypeError):
        canonical_arguments(arguments)


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


def test_a_dispatch_fault_reaches_a_call_the_framework_runs_itself() -> None:
    # Mutation testing faults a framework's own tools too: what the fault passes on goes
    # back as the run gave it (its exception raised again); what it makes up, as its text.
    registry = ToolRegistry()
    runs: list[str] = []

    async def run() -> str:
        runs.append("ran")
        raise ValueError("bad invoice")

    async def twice(dispatch: Dispatch, name: str, arguments: Any) -> ToolOutcome:
        await dispatch(name, arguments)
        return await dispatch(name, arguments)

    registry.dispatch_fault = twice
    with pytest.raises(ValueError, match="bad invoice"):
        asyncio.run(registry.recorded("lookup", "{}", run, text=str))
    assert runs == ["ran", "ran"]
    assert [(c.name, c.success) for c in registry.calls] == [("lookup", False)] * 2

    async def invent(dispatch: Dispatch, name: str, arguments: Any) -> ToolOutcome:
        return ToolOutcome("made up", True)

    registry.dispatch_fault = invent
    assert asyncio.run(registry.recorded("lookup", "{}", run, text=str)) == "made up"
    assert len(runs) == 2 and len(registry.calls) == 2  # never run, never recorded
