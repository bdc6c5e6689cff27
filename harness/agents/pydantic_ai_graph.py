"""The agents a pydantic-ai agent delegates to, found from its tools' code, their names, and
which tools delegate.

pydantic-ai declares no graph: delegation is a tool that runs another `Agent` (`await
other.run(..., usage=ctx.usage)`, its flight-booking example's pattern), so the graph is read
from the tools' code. An agent's delegates are the `Agent` objects its function tools name
directly (`harness.agents.code_references` says what that covers: globals read by name,
variables closed over, functions of the same module called, decorators' wrapped functions).
Then each delegate's tools, and so on; an agent reached again (a delegate that delegates
back) is not visited twice, so cycles end. An agent reached only through an attribute, a
container, a parameter or a call's result (`ctx.deps.agent`, `AGENTS["search"]`,
`make_agent()`) is not found: nothing says which object that is until the tool runs.

An agent's name is its `name`; an agent built without one is called by the name it was
found under (the variable its tool reads it from: what pydantic-ai infers on its first run
from the same variable), and the agent the factory returns by the factory's name. Two
agents of one graph with one name would make attribution ambiguous: they are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset

from harness.agents.code_references import AmbiguousAgentName as AmbiguousAgentName
from harness.agents.code_references import named_by


@dataclass(frozen=True)
class GraphAgent:
    """One agent of the graph: the name it is recorded under, and the agent."""

    name: str
    agent: Agent[Any, Any]


def function_tool_names(agent: Agent[Any, Any]) -> list[str]:
    """The agent's function tools, in registration order (other toolsets, such as MCP
    servers, list theirs only once connected)."""
    return [name for toolset in _function_toolsets(agent) for name in toolset.tools]


def agent_graph(root: Agent[Any, Any], root_name: str) -> list[GraphAgent]:
    """`root` and every agent its tools delegate to, recursively, root first, each once."""
    graph: list[GraphAgent] = []
    seen: set[int] = set()
    names: dict[str, Agent[Any, Any]] = {}
    pending: list[tuple[str, Agent[Any, Any]]] = [(root_name, root)]
    while pending:
        found_as, agent = pending.pop(0)
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        name = agent.name or found_as
        if name in names:
            raise AmbiguousAgentName(
                f"two agents of the graph are named {name!r}: give each a distinct name= "
                "so their model calls and tool calls can be told apart"
            )
        names[name] = agent
        graph.append(GraphAgent(name, agent))
        for toolset in _function_toolsets(agent):
            for tool in toolset.tools.values():
                pending.extend(_agents_named_by(tool.function))
    return graph


def agents_run_by_tools(graph: list[GraphAgent]) -> dict[str, frozenset[str]]:
    """Each function tool of `graph` that delegates to an agent of it, and the agents it
    runs: pydantic-ai runs one step's tool calls as concurrent tasks, so two of these in one
    step ask the model in no defined order. A tool declared `sequential=True` is left out:
    pydantic-ai runs it alone, after the calls before it and before those after it, so it
    races with none (a `prepare` that makes a tool sequential only as the run goes is not
    seen, and its tool still counted: admission asks for more names, never fewer)."""
    names = {id(node.agent): node.name for node in graph}
    runs: dict[str, frozenset[str]] = {}
    for node in graph:
        for toolset in _function_toolsets(node.agent):
            for name, tool in toolset.tools.items():
                if tool.sequential:
                    continue
                inner = {names[id(a)] for _, a in _agents_named_by(tool.function) if id(a) in names}
                if inner:
                    runs[name] = runs.get(name, frozenset()) | inner
    return runs


def _function_toolsets(agent: Agent[Any, Any]) -> Iterator[FunctionToolset[Any]]:
    for toolset in agent.toolsets:
        if isinstance(toolset, FunctionToolset):
            yield toolset


def _agents_named_by(function: Callable[..., Any]) -> Iterator[tuple[str, Agent[Any, Any]]]:
    """The agents a tool names directly (`harness.agents.code_references`)."""
    return named_by(function, Agent)
