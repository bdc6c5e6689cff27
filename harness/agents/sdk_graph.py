"""The agent graph of an OpenAI Agents SDK agent: every agent it can reach (the agents it
hands off to, plain, through `handoff(...)` or a `Handoff` built by hand, the agents it uses
as tools, and the agents its function tools and guardrails run themselves with `Runner.run`,
found from their code), the tools each offers its model, and a copy of the whole graph whose
function tools are recorded and whose handoffs are told to the model boundary (its MCP
servers' tools recorded too: `harness.agents.sdk_mcp`).

Only `harness.agents.frameworks.openai_agents` imports it: it needs the SDK.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, cast

from agents import Agent, FunctionTool, Handoff, RunConfig, handoff
from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData
from agents.util._types import MaybeAwaitable

from harness.agents.code_references import AmbiguousAgentName, named_by
from harness.agents.sdk_guardrails import guard_agent, guard_tool
from harness.agents.sdk_mcp import recording_mcp_tools
from harness.model_boundary import ModelBoundary
from harness.tool_registry import ToolRegistry, canonical_text

# The agent whose model call is being made: set by the run configuration's model-input
# filter, which the SDK calls in the task about to call the model, for every agent of the
# run and for agents run as tools (their runs inherit the run configuration).
ACTIVE_AGENT: ContextVar[str | None] = ContextVar("zeroclaw_sdk_agent", default=None)

# The run configuration of the run in progress when the user's code started it (set by
# `harness.agents.sdk_runs`): its handoff settings decide how a handoff passes the history.
RUN_CONFIG: ContextVar[RunConfig | None] = ContextVar("zeroclaw_sdk_run_config", default=None)


def note_agent(data: CallModelData[Any]) -> ModelInputData:
    ACTIVE_AGENT.set(data.agent.name)
    return data.model_data


def noting(own: CallModelInputFilter | None) -> CallModelInputFilter:
    """The model-input filter of a run configuration of the user's (an `as_tool`'s): it
    notes the asking agent, then applies the user's own filter, which decides what that
    agent's model is sent and so must not be lost in replay."""
    if own is None:
        return note_agent

    def both(data: CallModelData[Any]) -> MaybeAwaitable[ModelInputData]:
        note_agent(data)
        return own(data)

    return both


def handoff_name(item: Agent[Any] | Handoff[Any, Any]) -> str:
    return item.tool_name if isinstance(item, Handoff) else Handoff.default_tool_name(item)


def handoff_target(item: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | None:
    """The agent a handoff passes control to. A `Handoff` built by hand (not by `handoff()`)
    keeps none: its target is what its function returns, taken to be the agent of the name
    it declares (`agent_name`) that the function names directly; None when it names none."""
    if isinstance(item, Agent):
        return item
    target = item._agent_ref() if item._agent_ref is not None else None
    if isinstance(target, Agent):
        return target
    named = (a for _, a in named_by(item.on_invoke_handoff, Agent) if a.name == item.agent_name)
    return next(named, None)


def nested_agent(tool: Any) -> Agent[Any] | None:
    """The agent an `as_tool` function tool runs, else None."""
    agent = getattr(tool, "_agent_instance", None) if isinstance(tool, FunctionTool) else None
    return agent if isinstance(agent, Agent) else None


def tool_function(tool: FunctionTool) -> Any:
    """The user's function behind a function tool: the one `function_tool` wrapped (the SDK
    keeps it for `FunctionTool.__wrapped__`), else the invoker of a tool built by hand."""
    try:
        return tool.__wrapped__
    except AttributeError:
        return tool.on_invoke_tool


def run_by_tool(tool: Any) -> list[Agent[Any]]:
    """The agents a function tool's own code runs (`await Runner.run(agent, ...)`), its tool
    guardrails' included: those its function, or a guardrail function of it, names directly
    (`harness.agents.code_references`). An `as_tool` runs `nested_agent(tool)` instead."""
    if not isinstance(tool, FunctionTool) or nested_agent(tool) is not None:
        return []
    guardrails: list[Any] = [
        *(tool.tool_input_guardrails or ()),
        *(tool.tool_output_guardrails or ()),
    ]
    functions = [tool_function(tool), *(g.guardrail_function for g in guardrails)]
    return [agent for function in functions for _, agent in named_by(function, Agent)]


def run_by_guardrails(agent: Agent[Any]) -> list[Agent[Any]]:
    """The agents the agent's input and output guardrail functions run (the SDK's guardrail
    pattern: a guardrail agent run with `Runner.run` inside the guardrail function)."""
    guardrails: list[Any] = [*agent.input_guardrails, *agent.output_guardrails]
    return [a for g in guardrails for _, a in named_by(g.guardrail_function, Agent)]


def _neighbours(agent: Agent[Any]) -> Iterator[Agent[Any]]:
    for item in agent.handoffs:
        if (target := handoff_target(item)) is not None:
            yield target
    for tool in agent.tools:
        if (inner := nested_agent(tool)) is not None:
            yield inner
        yield from run_by_tool(tool)
    yield from run_by_guardrails(agent)


def reachable(root: Agent[Any]) -> list[Agent[Any]]:
    """Every agent reachable from `root`, root first; agents are told apart by identity, so
    agents that hand back to each other end the walk."""
    seen: dict[int, Agent[Any]] = {id(root): root}
    queue = [root]
    while queue:
        for other in _neighbours(queue.pop(0)):
            if id(other) not in seen:
                seen[id(other)] = other
                queue.append(other)
    graph = list(seen.values())
    _refuse_ambiguous_names(graph)
    return graph


def _refuse_ambiguous_names(graph: list[Agent[Any]]) -> None:
    """Agents are told apart by name in the record: two different agents of one name are
    refused. Two objects of one name used the same way (a clone, or one agent built twice:
    the same instructions, the same tools and handoffs offered, each handoff to an agent of
    the same name) are one agent as far as any record can tell, and are let be."""
    first: dict[str, Agent[Any]] = {}
    for agent in graph:
        other = first.setdefault(agent.name, agent)
        if other is agent:
            continue
        differ = [what for what, same in _alike(other, agent) if not same]
        if differ:
            raise AmbiguousAgentName(
                f"two different agents of the graph are named {agent.name!r} (their "
                f"{' and '.join(differ)} differ): give each a distinct name= so their model "
                "calls and tool calls can be told apart"
            )


def _alike(one: Agent[Any], two: Agent[Any]) -> Iterator[tuple[str, bool]]:
    yield "instructions", _same_code(one.instructions) == _same_code(two.instructions)
    yield "tools", offered(one) == offered(two)
    yield "handoffs", _handoff_map(one) == _handoff_map(two)


def _same_code(value: Any) -> Any:
    # Dynamic instructions defined in a factory are a new function per build: one code.
    return getattr(value, "__code__", value)


def _handoff_map(agent: Agent[Any]) -> dict[str, str | None]:
    return {handoff_name(h): _target_name(h) for h in agent.handoffs if _enabled(h)}


def _target_name(item: Agent[Any] | Handoff[Any, Any]) -> str | None:
    target = handoff_target(item)
    name = target.name if target is not None else getattr(item, "agent_name", None)
    return name if isinstance(name, str) else None


def offered(agent: Agent[Any]) -> frozenset[str]:
    """The names an agent may offer its model: its function tools and its handoffs (less any
    switched off for good with `is_enabled=False`; a callable is decided at run time)."""
    tools = {
        t.name for t in agent.tools if isinstance(t, FunctionTool) and t.is_enabled is not False
    }
    handoffs = {handoff_name(h) for h in agent.handoffs if _enabled(h)}
    return frozenset(tools | handoffs)


def _enabled(item: Agent[Any] | Handoff[Any, Any]) -> bool:
    return not isinstance(item, Handoff) or item.is_enabled is not False


def agent_tools(graph: list[Agent[Any]]) -> dict[str, frozenset[str]]:
    """Each agent of the graph (`reachable(root)`, by name; agents sharing a name share an
    entry) and what it offers its model."""
    tools: dict[str, frozenset[str]] = {}
    for agent in graph:
        tools[agent.name] = tools.get(agent.name, frozenset()) | offered(agent)
    return tools


def agent_handoffs(graph: list[Agent[Any]]) -> dict[str, dict[str, str]]:
    """Each agent of the graph that hands off: the name of each handoff tool it offers and
    the agent that tool passes control to (a handoff whose target only its own function
    knows goes by the agent name it declares)."""
    found: dict[str, dict[str, str]] = {}
    for agent in graph:
        for name, to in _handoff_map(agent).items():
            if to is not None:
                found.setdefault(agent.name, {})[name] = to
    return found


def agents_run_by_tools(graph: list[Agent[Any]]) -> dict[str, frozenset[str]]:
    """Each tool of the graph that runs an agent (`as_tool`, or a function tool whose code
    runs one) and the agents it runs: the SDK runs a step's function tools at the same time,
    so two of these in one step ask the model in no defined order."""
    runs: dict[str, frozenset[str]] = {}
    for agent in graph:
        for tool in agent.tools:
            if not isinstance(tool, FunctionTool) or tool.is_enabled is False:
                continue
            inner = [a for a in (nested_agent(tool),) if a is not None] + run_by_tool(tool)
            if inner:
                runs[tool.name] = runs.get(tool.name, frozenset()) | {a.name for a in inner}
    return runs


# Set by the SDK on a tool's context when its default failure handler turned an exception
# into text for the model: the only sign that such a call failed.
_HANDLED_FAILURE = "_function_tool_default_failure_handled"


def tool_text(content: Any) -> str:
    """A tool's output as the model reads it: text, or the text of its text parts (an MCP
    tool's output is one `{"type": "text", "text": ...}` part, or a list of them)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join([_part_text(part) for part in content])
    if isinstance(content, dict) or hasattr(content, "text"):
        return _part_text(content)
    return "" if content is None else str(content)


def _part_text(part: Any) -> str:
    text = part.get("text", "") if isinstance(part, dict) else getattr(part, "text", "")
    return text if isinstance(text, str) else ""


def handled_failure(context: Any) -> bool:
    """Whether the SDK's default failure handler turned the call's exception into text."""
    return bool(getattr(context, _HANDLED_FAILURE, False))


def recording(tool: Any, registry: ToolRegistry, agent: str | None = None) -> Any:
    """The user's tool, its every dispatch recorded (under `agent`, in a graph of several);
    other kinds of tool pass through."""
    if not isinstance(tool, FunctionTool):
        return tool
    original = tool.on_invoke_tool

    async def invoke(context: Any, arguments: str) -> Any:
        async def run() -> Any:
            try:
                return await original(context, arguments)
            finally:
                # The registry records the call as soon as this returns, with no await in
                # between: another agent's call (one run as this tool, say) may have set
                # the registry's agent meanwhile.
                if agent is not None:
                    registry.agent = agent

        return await registry.recorded(
            tool.name,
            canonical_text(arguments),
            run,
            text=tool_text,
            failed=lambda _result: handled_failure(context),
        )

    return dataclasses.replace(tool, on_invoke_tool=invoke)


class GraphCopy:
    """A copy of the user's graph for one case (the user's agents are never modified): every
    agent cloned with its function tools recorded, its handoffs leading to the copies and
    told to the boundary, the agents it uses as tools copied too and run with the harness's
    model even where `as_tool` was given a run configuration of its own. Agents the user's
    code runs itself are copied as it runs them (`runs`).

    `known`: the names of the agents admission found (the graph walked once). An agent of
    another name, met only as the run goes (one the user's code reaches through an
    attribute, a container, a call), is copied and recorded all the same, under its name
    even in a graph of one, and listed in `late`: admission never saw its tools."""

    def __init__(
        self,
        registry: ToolRegistry,
        boundary: ModelBoundary,
        config: RunConfig,
        *,
        attribute: bool,
        known: frozenset[str] = frozenset(),
    ) -> None:
        self._registry = registry
        self._boundary = boundary
        self._config = config
        self._attribute = attribute
        self._known = known
        self.late: set[str] = set()
        self._copies: dict[int, Agent[Any]] = {}

    def copy(self, agent: Agent[Any]) -> Agent[Any]:
        if (done := self._copies.get(id(agent))) is not None:
            return done
        clone = agent.clone()
        # Registered before its neighbours are copied, so a cycle ends here; and as its own
        # copy, since a handoff made with `handoff(copy)` gives back the copy itself.
        self._copies[id(agent)] = self._copies[id(clone)] = clone
        guard_agent(clone, self._boundary)
        late = agent.name not in self._known
        if late:
            self.late.add(agent.name)
        owner = agent.name if self._attribute or late else None
        clone.tools = [self._tool(tool, agent.name, owner) for tool in agent.tools]
        clone.handoffs = [self._handoff(item, agent.name) for item in agent.handoffs]
        recording_mcp_tools(clone, self._registry, owner, tool_text, handled_failure)
        return clone

    def runs(self, agent: Agent[Any], config: RunConfig | dict[str, Any] | None) -> RunSetup:
        """What the user's code running `agent` with `config` runs instead: the agent's
        copy, with the harness's run configuration (the user's own kept, but for the
        model, tracing and the input filter that names the asking agent)."""
        if config is None or config is self._config:
            return RunSetup(self.copy(agent), self._config)
        if isinstance(config, dict):
            config = RunConfig(**config)
        return RunSetup(self.copy(agent), self._harness_config(config))

    def _harness_config(self, config: RunConfig) -> RunConfig:
        if config.model is self._config.model:
            return config  # made here already (an as_tool's, passed on to its run)
        return dataclasses.replace(
            config,
            model=self._config.model,
            tracing_disabled=True,
            call_model_input_filter=noting(config.call_model_input_filter),
        )

    def _tool(self, tool: Any, owner: str, recorded_as: str | None) -> Any:
        inner = nested_agent(tool)
        if inner is not None:
            copy = self.copy(inner)
            invoke = rebound(tool.on_invoke_tool, lambda value: self._substitute(value, inner))
            if invoke is tool.on_invoke_tool:
                raise TypeError(
                    f"agent {owner!r} uses agent {inner.name!r} as tool {tool.name!r} in a way "
                    "the harness cannot follow (its as_tool function does not hold the agent)"
                )
            tool = dataclasses.replace(tool, on_invoke_tool=invoke, _agent_instance=copy)
        if isinstance(tool, FunctionTool):
            tool = guard_tool(tool, self._boundary, owner)
        return recording(tool, self._registry, recorded_as)

    def _substitute(self, value: Any, inner: Agent[Any]) -> Any:
        if value is inner:
            return self._copies[id(inner)]
        if isinstance(value, RunConfig) and value is not self._config:
            # An as_tool given its own run configuration keeps it, but for the model.
            return self._harness_config(value)
        return None

    def _handoff(self, item: Agent[Any] | Handoff[Any, Any], owner: str) -> Handoff[Any, Any]:
        made: Handoff[Any, Any] = handoff(self.copy(item)) if isinstance(item, Agent) else item
        original = made.on_invoke_handoff

        async def invoke(context: Any, arguments: str) -> Any:
            target = await original(context, arguments)
            # A `Handoff` built by hand returns the user's own agent: run its copy instead.
            copy = self.copy(target) if isinstance(target, Agent) else target
            filtered, nested = passes_history(made, RUN_CONFIG.get() or self._config)
            name = getattr(copy, "name", str(copy))
            self._boundary.handoff(owner, name, filtered=filtered, nested=nested)
            return copy

        replaced = dataclasses.replace(made, on_invoke_handoff=invoke)
        target = handoff_target(item)
        if target is not None:
            replaced._agent_ref = weakref.ref(self.copy(target))
        return replaced


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """What a run the user's code starts runs: the agent's case copy and its configuration."""

    agent: Agent[Any]
    config: RunConfig


def passes_history(made: Handoff[Any, Any], config: RunConfig) -> tuple[bool, bool]:
    """How the SDK passes the history on at this handoff, as it decides: through a filter
    (the handoff's `input_filter`, else the run's `handoff_input_filter`), which replaces
    nesting; else nested into one summary message (`nest_handoff_history`, the handoff's
    own setting over the run's); else whole. (filtered, nested)."""
    if made.input_filter is not None or config.handoff_input_filter is not None:
        return True, False
    own = made.nest_handoff_history
    return False, bool(config.nest_handoff_history if own is None else own)


# How deep into a function's closures a nested agent is looked for: as_tool's tool wraps
# the function that runs the agent once; a little room for a wrapper of the user's.
_CLOSURE_DEPTH = 4


def rebound(
    func: Callable[..., Any], substitute: Callable[[Any], Any], depth: int = _CLOSURE_DEPTH
) -> Callable[..., Any]:
    """`func` with every value its closures hold (functions' closures followed `depth`
    deep) replaced by `substitute(value)` where that is not None; `func` itself when none
    is. The SDK's `as_tool` keeps the agent it runs only in its function's closure."""
    if depth == 0:
        return func
    if not isinstance(func, types.FunctionType):
        return _rebound_object(func, substitute, depth)
    if not func.__closure__:
        return func
    cells: list[types.CellType] = []
    changed = False
    for cell in func.__closure__:
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet filled
            cells.append(cell)
            continue
        new = substitute(value)
        if new is None and isinstance(value, types.FunctionType):
            inner = rebound(value, substitute, depth - 1)
            new = inner if inner is not value else None
        changed = changed or new is not None
        cells.append(types.CellType(new) if new is not None else cell)
    if not changed:
        return func
    copy = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, tuple(cells)
    )
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__dict__.update(func.__dict__)
    return copy


def _rebound_object(
    invoker: Any, substitute: Callable[[Any], Any], depth: int
) -> Callable[..., Any]:
    """A callable object (the SDK's tool invokers keep the function they call as an
    attribute) copied with its functions rebound; the object itself when none changes."""
    attributes = getattr(invoker, "__dict__", None) or {}
    changed = {
        key: new
        for key, value in attributes.items()
        if isinstance(value, types.FunctionType)
        and (new := rebound(value, substitute, depth - 1)) is not value
    }
    if not changed:
        return cast(Callable[..., Any], invoker)
    duplicate = copy.copy(invoker)
    duplicate.__dict__.update(changed)
    return cast(Callable[..., Any], duplicate)
