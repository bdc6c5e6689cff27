"""`harness.agents.sdk_cache`: the model settings of an SDK request as the boundary keeps
them, made once for each value of the settings; the built-in agent, copied from one built
once."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import ModelSettings
from openai.types.shared import Reasoning

from harness.agents import sdk_cache
from harness.agents.sdk_cache import settings_json


def _traced(settings: ModelSettings) -> dict[str, Any]:
    """What the SDK traces of them, unset fields left out: what the boundary must keep."""
    return sdk_cache._present(settings.to_traceable_dict())


SETTINGS = [
    ModelSettings(),
    ModelSettings(temperature=1),  # an int the SDK sends as 1.0
    ModelSettings(temperature=1.0),
    ModelSettings(temperature=-0.0),
    ModelSettings(temperature=0.0),
    ModelSettings(max_tokens=True),  # a bool the SDK sends as 1
    ModelSettings(max_tokens=1),
    ModelSettings(temperature=0.2, top_p=0.9, tool_choice="auto", parallel_tool_calls=False),
    ModelSettings(reasoning=Reasoning(effort="low"), metadata={"team": "a"}),
    ModelSettings(extra_headers={"Authorization": "never traced"}),
]


def test_each_value_is_what_the_sdk_traces_however_the_values_before_it_were_met() -> None:
    # Twice round, so the second time every value is met with the others already made:
    # values equal in Python (1, 1.0, True; -0.0, 0.0) must not be taken for each other.
    for settings in [*SETTINGS, *reversed(SETTINGS)]:
        made = settings_json(settings)
        assert made == _traced(settings)
        assert [type(v) for v in made.values()] == [type(v) for v in _traced(settings).values()]
        assert repr(made) == repr(_traced(settings))


def _serialised(monkeypatch: pytest.MonkeyPatch) -> list[ModelSettings]:
    """Each settings value the SDK is asked to serialise from now on, with nothing kept."""
    made: list[ModelSettings] = []
    real = ModelSettings.to_traceable_dict

    def counted(self: ModelSettings) -> dict[str, Any]:
        made.append(self)
        return real(self)

    monkeypatch.setattr(ModelSettings, "to_traceable_dict", counted)
    monkeypatch.setattr(sdk_cache, "_made", {})
    return made


def test_a_value_is_serialised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _serialised(monkeypatch)
    for _ in range(3):  # a fresh object each request, as the SDK resolves them
        assert settings_json(ModelSettings(temperature=0.3, max_tokens=64)) == {
            "temperature": 0.3,
            "max_tokens": 64,
        }
    assert len(made) == 1
    # A value a key cannot hold for certain (a dict) is serialised each time.
    for _ in range(2):
        settings_json(ModelSettings(metadata={"team": "a"}))
    assert len(made) == 3


def test_settings_without_a_float_are_serialised_once_for_each_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No float among them (nothing but None, bools, ints and strings): their key is read in
    # one step; each value is still made once, and never taken for another.
    values = [
        ModelSettings(max_tokens=64, tool_choice="auto", store=False),
        ModelSettings(max_tokens=64, tool_choice="auto", store=True),
        ModelSettings(max_tokens=65, tool_choice="auto", store=False),
        ModelSettings(max_tokens=64, tool_choice="required", store=False),
    ]
    expected = [_traced(settings) for settings in values]
    made = _serialised(monkeypatch)
    for _ in range(3):
        for settings, traced in zip(values, expected, strict=True):
            assert repr(settings_json(settings)) == repr(traced)
    assert len(made) == len(values)


def test_each_request_gets_a_dict_of_its_own() -> None:
    first = settings_json(ModelSettings(temperature=0.7))
    first["temperature"] = 2.0
    first["injected"] = True
    assert settings_json(ModelSettings(temperature=0.7)) == {"temperature": 0.7}


def test_the_values_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk_cache, "_made", {})
    for tokens in range(1, 200):
        assert settings_json(ModelSettings(max_tokens=tokens)) == {"max_tokens": tokens}
    assert len(sdk_cache._made) <= sdk_cache._KEPT


def test_the_built_in_agent_is_what_building_it_makes_with_lists_of_its_own() -> None:
    import dataclasses

    from agents import Agent, FunctionTool

    from harness.agents.frameworks.openai_agents import HarnessModel
    from harness.agents.sdk_cache import built_in_agent
    from harness.model_boundary import ModelBoundary, ModelRequest, ModelStep

    class Silent:
        async def respond(self, request: ModelRequest) -> ModelStep:
            raise AssertionError("no model is asked")

    async def invoke(_context: Any, arguments: str) -> str:
        return arguments

    def tools() -> list[Any]:
        return [FunctionTool("echo", "Echo it.", {"type": "object"}, invoke)]

    made = []
    for case in ("first", "second"):
        model = HarnessModel(ModelBoundary(Silent()))
        listed = tools()
        agent = built_in_agent(f"zeroclaw-eval:{case}", model, listed)
        fresh = Agent(name=f"zeroclaw-eval:{case}", model=model, tools=listed)
        for field in dataclasses.fields(Agent):
            assert getattr(agent, field.name) == getattr(fresh, field.name), field.name
        assert agent.model is model and agent.tools is listed
        made.append(agent)
    first, second = made
    for field in dataclasses.fields(Agent):
        value = getattr(first, field.name)
        if isinstance(value, (list, dict, ModelSettings)):
            assert value is not getattr(second, field.name), field.name
    first.handoffs.append(second)
    first.model_settings.temperature = 0.9
    assert second.handoffs == [] and second.model_settings.temperature is None


def _case(case_id: str, message: str) -> Any:
    """A context for the built-in agent whose model calls `echo` with `message` once, waits
    for `proceed` before answering, and then answers in text."""
    import asyncio

    from harness.agents.protocol import AgentContext
    from harness.builtin_toolset import builtin_tools
    from harness.model_boundary import ModelBoundary, ModelRequest, ModelStep, ToolCall
    from harness.tool_registry import ToolRegistry

    class Script:
        def __init__(self) -> None:
            self.asked = 0
            self.proceed = asyncio.Event()

        async def respond(self, request: ModelRequest) -> ModelStep:
            self.asked += 1
            if self.asked == 1:
                return ModelStep(
                    tool_calls=(ToolCall(f"{case_id}-1", "echo", {"message": message}),)
                )
            await self.proceed.wait()
            return ModelStep(text=f"done: {message}")

    script = Script()
    context = AgentContext(case_id, ModelBoundary(script), ToolRegistry.of(builtin_tools()))
    return context, script


def test_the_built_in_agents_tools_are_made_once_and_record_in_the_case_running_them() -> None:
    import asyncio

    from harness.agents.frameworks.openai_agents import OpenAIAgentsAdapter

    adapter = OpenAIAgentsAdapter()

    async def both() -> list[str]:
        (first, one), (second, two) = _case("first", "alpha"), _case("second", "beta")
        sessions = [adapter.start(first), adapter.start(second)]
        assert sessions[0]._agent.tools == sessions[1]._agent.tools
        assert all(a is b for a, b in zip(*(s._agent.tools for s in sessions), strict=True))
        assert sessions[0]._agent.tools is not sessions[1]._agent.tools  # lists of their own
        turns = [asyncio.ensure_future(s.run_turn("Echo it")) for s in sessions]
        # Both cases' tools have run (each turn waits in its second model call) before
        # either turn ends: their dispatches interleave on the one loop.
        while one.asked < 2 or two.asked < 2:
            await asyncio.sleep(0)
        two.proceed.set()
        one.proceed.set()
        answers = list(await asyncio.gather(*turns))
        for context, message in ((first, "alpha"), (second, "beta")):
            calls = [(c.name, c.arguments, c.result) for c in context.tools.calls]
            assert calls == [("echo", f'{{"message":"{message}"}}', message)]
        return answers

    assert asyncio.run(both()) == ["done: alpha", "done: beta"]


def test_a_built_in_tool_run_outside_its_cases_turn_is_refused_not_recorded_elsewhere() -> None:
    import asyncio

    from agents import FunctionTool

    from harness.agents.sdk_cache import function_tools
    from harness.errors import HarnessError

    context, _ = _case("lone", "alpha")
    (echo, *_rest) = function_tools(context.tools)
    assert isinstance(echo, FunctionTool) and echo.name == "echo"
    with pytest.raises(HarnessError, match="'echo' was called outside a case's turn"):
        asyncio.run(echo.on_invoke_tool(None, '{"message": "alpha"}'))  # type: ignore[arg-type]
    assert context.tools.calls == []


def test_settings_with_nothing_set_are_what_the_sdk_traces_without_serialising(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _traced(ModelSettings()) == {}
    made = _serialised(monkeypatch)
    first = settings_json(ModelSettings())
    assert first == {}
    first["temperature"] = 2.0  # the caller's own dict
    assert settings_json(ModelSettings()) == {}
    # Only a provider extra set, which the trace leaves out: nothing set either.
    assert settings_json(ModelSettings(extra_headers={"x": "y"})) == {}
    assert made == []
    # A traced field set, or settings of a subclass (which may serialise itself otherwise):
    # asked of the SDK as before.
    assert settings_json(ModelSettings(tool_choice="auto")) == {"tool_choice": "auto"}

    class Mine(ModelSettings):
        pass

    assert settings_json(Mine()) == {}
    assert len(made) == 2


def _function_tool(name: str, description: str, schema: dict[str, Any]) -> Any:
    from agents import FunctionTool

    async def invoke(_context: Any, arguments: str) -> str:
        return arguments

    return FunctionTool(name, description, schema, invoke, strict_json_schema=False)


def test_requests_offering_the_same_tools_share_one_tuple_of_their_schemas() -> None:
    from agents import WebSearchTool

    from harness.agents.sdk_cache import tool_schemas
    from harness.model_boundary import ToolSchema

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    echo, find = (
        _function_tool("echo", "Echo it.", {"type": "object"}),
        _function_tool("find", "Find it.", schema),
    )
    first = tool_schemas([echo, WebSearchTool(), find])
    assert first == (
        ToolSchema("echo", "Echo it.", {"type": "object"}),
        ToolSchema("find", "Find it.", schema),
    )
    assert first[1].parameters is schema
    # A list made anew, of the same tools or of copies alike (a case's copy of an agent):
    # the same tuple.
    assert tool_schemas([echo, find]) is first
    assert tool_schemas([_function_tool("echo", "Echo it.", echo.params_json_schema), find]) is (
        first
    )
    # Anything a schema shows changed, or the order: schemas of their own.
    find.description = "Find it fast."
    changed = tool_schemas([echo, find])
    assert changed[1] == ToolSchema("find", "Find it fast.", schema)
    assert tool_schemas([find, echo]) == (changed[1], changed[0])
    other = {"type": "object"}  # equal, but another object: it may change apart
    assert tool_schemas([_function_tool("echo", "Echo it.", other)])[0].parameters is other
    assert tool_schemas([]) == ()


def test_the_tool_schemas_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.agents.sdk_cache import tool_schemas

    monkeypatch.setattr(sdk_cache, "_schemas", {})
    for n in range(200):
        (made,) = tool_schemas([_function_tool(f"t{n}", "A tool.", {"type": "object"})])
        assert made.name == f"t{n}"
    assert len(sdk_cache._schemas) <= sdk_cache._KEPT
