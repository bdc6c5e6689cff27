"""The agents a pydantic-ai agent delegates to, found from its tools' code, their names, and
which tools delegate.

pydantic-ai declares no graph: delegation is a tool that runs another `Agent` (`await
other.run(..., usage=ctx.usage)`, its flight-booking example's pattern), so the graph is read
from the tools' code. An agent's delegates are the `Agent` objects its function tools name
directly: the module globals a tool reads by name and the variables it closes over, in the
tool itself, in the functions it defines inside itself, in the functions of its own module
it calls by name and in the function a decorator wraps (each followed the same way). Then
each delegate's tools, and so on; an agent reached again (a delegate that delegates back)
is not visited twice, so cycles end. An agent reached only through an attribute, a
container, a parameter or a call's result (`ctx.deps.agent`, `AGENTS["search"]`,
`make_agent()`) is not found: nothing says which object that is until the tool runs.

An agent's name is its `name`; an agent built without one is called by the name it was
found under (the variable its tool reads it from: what pydantic-ai infers on its first run
from the same variable), and the agent the factory returns by the factory's name. Two
agents of one graph with one name would make attribution ambiguous: they are refused.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset


class AmbiguousAgentName(ValueError):
    """Two agents of one graph share a name."""


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
    """The agents `function` names directly, with the names it uses for them, following the
    functions of its own module it names (each once)."""
    pending: list[Any] = [function]
    followed: set[int] = set()
    while pending:
        current = _plain_function(pending.pop(0))
        if current is None or id(current) in followed:
            continue
        followed.add(id(current))
        for name, value in _names_read(current):
            if isinstance(value, Agent):
                yield name, value
            elif isinstance(value, types.FunctionType) and value.__globals__ is current.__globals__:
                pending.append(value)
        # A decorator's wrapper (functools.wraps) names the function it wraps, wherever from.
        pending.append(getattr(current, "__wrapped__", None))


def _plain_function(value: Any) -> types.FunctionType | None:
    """The Python function behind a tool (a bound method's, a decorator's `__wrapped__`)."""
    for _ in range(100):  # a `__wrapped__` chain that loops back must not spin
        if isinstance(value, types.FunctionType):
            return value
        inner = getattr(value, "__func__", None) or getattr(value, "__wrapped__", None)
        if inner is None:
            return None
        value = inner
    return None


def _names_read(function: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """The values of the globals `function` (and code nested in it) reads by name, then of
    the variables it closes over."""
    missing = object()
    for name in _global_names(function.__code__):
        value = function.__globals__.get(name, missing)
        if value is not missing:
            yield name, value
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a cell not yet filled: the variable is assigned later
            continue


def _global_names(code: types.CodeType) -> Iterator[str]:
    # The names loaded as globals, not every name of co_names: those include attribute
    # names, and `ctx.deps.agent` does not read a global `agent`.
    pending = [code]
    while pending:
        current = pending.pop(0)
        for instruction in dis.get_instructions(current):
            if instruction.opname in _GLOBAL_LOADS and isinstance(instruction.argval, str):
                yield instruction.argval
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
