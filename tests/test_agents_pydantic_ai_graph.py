"""`harness.agents.pydantic_ai_graph`: the agents a pydantic-ai agent's tools delegate to,
found from the tools' code, and the names they are recorded under."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent, RunContext

from harness.agents.pydantic_ai_graph import (
    AmbiguousAgentName,
    agent_graph,
    function_tool_names,
)

# Module globals, as pydantic-ai's own examples declare their agents.
leaf = Agent(name="leaf")
unnamed_leaf: Agent[None, str] = Agent()
back_to_top = Agent(name="back")


@leaf.tool_plain
def leaf_tool(x: str) -> str:
    return x


def graph_of(agent: Agent[Any, Any]) -> list[tuple[str, Agent[Any, Any]]]:
    return [(node.name, node.agent) for node in agent_graph(agent, "factory")]


def with_tool(agent: Agent[Any, Any], function: Callable[..., Any]) -> Agent[Any, Any]:
    agent.tool(function)
    return agent


def test_a_delegate_read_from_the_modules_globals_is_found_with_its_tools() -> None:
    async def ask(ctx: RunContext[None], q: str) -> str:
        return (await leaf.run(q, usage=ctx.usage)).output

    top = with_tool(Agent(name="top"), ask)
    assert graph_of(top) == [("top", top), ("leaf", leaf)]
    assert function_tool_names(leaf) == ["leaf_tool"]


def test_a_delegate_closed_over_and_one_used_by_a_nested_function_are_found() -> None:
    inner = Agent(name="inner")

    async def ask(ctx: RunContext[None], q: str) -> str:
        async def go() -> str:
            return (await leaf.run(q)).output

        return (await inner.run(q)).output + await go()

    top = with_tool(Agent(name="top"), ask)
    names = [name for name, _ in graph_of(top)]
    assert names[0] == "top" and sorted(names[1:]) == ["inner", "leaf"]


def logged(function: Callable[..., Any]) -> Callable[..., Any]:
    # A decorator of another module's kind: its wrapper names the tool only by closure.
    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        return await function(*args, **kwargs)

    return wrapper


def _helper(q: str) -> Any:
    # A function of the tool's module the tool calls by name: followed.
    return unnamed_leaf.run(q)


def test_a_delegate_behind_a_module_function_and_a_decorator_is_found_by_its_name() -> None:
    async def ask(ctx: RunContext[None], q: str) -> str:
        return str((await _helper(q)).output)

    top = with_tool(Agent(), logged(ask))
    # Unnamed agents: the root by the name it was given, a delegate by its variable.
    assert graph_of(top) == [("factory", top), ("unnamed_leaf", unnamed_leaf)]


def test_an_agent_reached_only_through_an_attribute_is_not_a_delegate() -> None:
    async def ask(ctx: RunContext[Any], q: str) -> str:
        return str((await ctx.deps.leaf.run(q)).output)

    top = with_tool(Agent(name="top"), ask)
    assert graph_of(top) == [("top", top)]


def test_agents_that_delegate_back_end_the_walk() -> None:
    top = Agent(name="top")

    async def ask_back(ctx: RunContext[None], q: str) -> str:
        return (await back_to_top.run(q)).output

    async def ask_top(ctx: RunContext[None], q: str) -> str:
        return (await top.run(q)).output

    with_tool(top, ask_back)
    with_tool(back_to_top, ask_top)
    try:
        assert graph_of(top) == [("top", top), ("back", back_to_top)]
    finally:
        back_to_top._function_toolset.tools.clear()  # the module-level agent, as it was


def test_two_agents_of_one_name_are_refused() -> None:
    twin = Agent(name="leaf")

    async def ask(ctx: RunContext[None], q: str) -> str:
        return (await leaf.run(q)).output + (await twin.run(q)).output

    top = with_tool(Agent(name="top"), ask)
    with pytest.raises(AmbiguousAgentName, match="two agents of the graph are named 'leaf'"):
        agent_graph(top, "factory")
