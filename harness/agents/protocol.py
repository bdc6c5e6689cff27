"""The agent adapter protocol: what the runner hands an agent, and what it expects back.

An adapter builds a fresh agent for one case from the harness's model boundary and tool
registry, runs one user turn at a time through the agent's own loop, and returns the
turn's final text. The harness never re-implements a framework's loop.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, runtime_checkable

import msgspec

from harness.approvals import ApprovalDesk
from harness.builtin_toolset import BUILTIN_TOOL_NAMES, builtin_tools
from harness.model_boundary import ModelBoundary
from harness.tool_registry import Tool, ToolRegistry
from harness.workspace import Workspace


@dataclass(frozen=True)
class AgentSurface:
    """What admission needs to know about the agent under test: its name and the tools a
    fixture may script calls to (those of every agent of its graph, handoffs included).

    `agents` maps each agent of a multi-agent graph (the one the factory returns, the
    agents it hands off to, the agents it uses as tools or delegates to) to the tools it
    offers its model; empty for an agent that is one agent. `runs_agents` maps each tool
    that runs agents of the graph (an agent used as a tool, a pydantic-ai tool that
    delegates) to the agents it runs.
    `hands_off`: an agent of the graph passes control to another (an SDK handoff), so a
    turn may start at the agent that answered the last (`AgentContext.next_turn_agent`).
    `guardrails`: the guardrails a case may expect to trip (None: not known)."""

    name: str
    tools: frozenset[str]
    agents: Mapping[str, frozenset[str]] = field(default_factory=dict)
    runs_agents: Mapping[str, frozenset[str]] = field(default_factory=dict)
    hands_off: bool = False
    # The names of the guardrails of every agent of the graph (and a framework's
    # counterparts: pydantic-ai's output validators and usage limits) a fixture may say
    # must trip; None: not known (an own loop or adapter), and any name is taken as it is.
    guardrails: frozenset[str] | None = None


class AgentGraph(msgspec.Struct, frozen=True):
    """What walking the user's framework agent finds, once per adapter: each agent of its
    graph and the tools it offers its model (one entry for an agent that is one agent), each
    tool that runs agents of the graph and the agents it runs, and each agent that hands off
    with its handoff tools and the agent each passes control to."""

    agents: Mapping[str, frozenset[str]]
    runs_agents: Mapping[str, frozenset[str]] = msgspec.field(default_factory=dict)
    handoffs: Mapping[str, Mapping[str, str]] = msgspec.field(default_factory=dict)
    # Each agent with guardrails, and their names.
    guardrails: Mapping[str, frozenset[str]] = msgspec.field(default_factory=dict)
    # The agents that declare instructions (or system prompts) for their model.
    instructed: frozenset[str] = frozenset()


_NO_GRAPH = AgentGraph({})


class AgentContext:
    """What an adapter gets for one case; everything in it is fresh for that case.

    `workspace` is the case's private temporary directory, created on first use (most
    replay cases never touch it) and removed by the runner after grading.

    `next_turn_agent` is the case's `next_turn_agent`: where each turn after the first
    starts in a graph of agents that hand off, "first" (the agent the adapter builds) or
    "last" (the agent that gave the previous turn's answer). Only an adapter whose surface
    says `hands_off` honours it (admission refuses "last" for any other); one agent, a
    pydantic-ai graph (its delegates answer inside a tool) and an own loop ignore it.

    `setup_context` is the case's `setup.context` (a copy of its own; None: the fixture has
    none). `run_context` is what the case's agent runs with, the SDK's run context or
    pydantic-ai's deps: the `context` setting's builder's, set before `start`; an adapter
    sets it to what it gives its framework (`context_for_run`), and an own loop may set it,
    so that `context_json` reads it after the last turn. `sdk_session` is the case's
    OpenAI Agents SDK `Session` when the `session` setting asks for one (None otherwise).

    `approvals` is the case's approval desk: an adapter whose framework holds a tool call
    for human approval asks it (`approvals.decide(call_id, tool)`) and resumes the run with
    the decision, as the framework documents; every request is recorded.
    """

    def __init__(
        self,
        case_id: str,
        model: ModelBoundary,
        tools: ToolRegistry,
        workspace: Workspace | None = None,
        *,
        next_turn_agent: Literal["first", "last"] = "first",
        setup_context: dict[str, Any] | None = None,
        approvals: ApprovalDesk | None = None,
    ) -> None:
        self.case_id = case_id
        self.approvals = approvals if approvals is not None else ApprovalDesk()
        self.model = model
        self.tools = tools
        self.next_turn_agent = next_turn_agent
        self.case_workspace = workspace if workspace is not None else Workspace()
        self.setup_context = setup_context
        self.run_context: Any = None
        self.context_built = False  # the builder made `run_context` (None included)
        self.sdk_session: Any = None

    def context_for_run(self, convert: Callable[[dict[str, Any]], Any] | None = None) -> Any:
        """What the framework runs this case with: the builder's context, else the case's
        `setup.context` (through `convert`, the adapter's default: pydantic-ai validates
        it into the agent's `deps_type`), else None; kept as `run_context`."""
        if not self.context_built and self.run_context is None:
            data = self.setup_context
            if data is not None:
                self.run_context = convert(data) if convert is not None else data
            self.context_built = True
        return self.run_context

    @property
    def workspace(self) -> Path:
        return self.case_workspace.root

    def remove_workspace(self) -> None:
        self.case_workspace.remove()


@runtime_checkable
class AgentSession(Protocol):
    """One case's agent: runs user turns in order, keeping its own conversation state."""

    def run_turn(self, user_input: str) -> Awaitable[str] | str: ...


@runtime_checkable
class AgentAdapter(Protocol):
    """Builds sessions of one kind of agent."""

    name: str

    def tools(self) -> list[Tool]:
        """The tools registered for every case (their names are checked at admission)."""
        ...

    def start(self, context: AgentContext) -> AgentSession:
        """A fresh agent for one case, wired to `context.model` and `context.tools`."""
        ...


A = TypeVar("A")

# Each built-in framework by the module and name of its agent class, found along an
# object's classes by name, so telling one needs neither framework imported.
_AGENT_CLASSES = {
    ("agents.agent", "Agent"): "openai-agents",
    ("pydantic_ai.agent", "Agent"): "pydantic-ai",
}
FRAMEWORK_LABELS = {
    "openai-agents": "an OpenAI Agents SDK agent (agents.Agent)",
    "pydantic-ai": "a pydantic-ai agent (pydantic_ai.Agent)",
}


def framework_of(value: object) -> str | None:
    """The built-in framework whose agent `value` is (`openai-agents`, `pydantic-ai`), or
    None: what a factory returned, told without importing any framework."""
    return framework_of_class(type(value))


def framework_of_class(cls: type) -> str | None:
    """The built-in framework whose agent class `cls` is or derives from, or None."""
    for base in getattr(cls, "__mro__", ()):
        framework = _AGENT_CLASSES.get((base.__module__, base.__qualname__))
        if framework is not None:
            return framework
    return None


class FrameworkAdapter(Generic[A]):
    """What the built-in framework adapters share: the default agent with the built-in
    tools, or the user's own agent, built per case by `factory`, with its own tools."""

    framework: ClassVar[str]
    agent_type: ClassVar[type]  # what `factory` must return (e.g. agents.Agent)
    agent_label: ClassVar[str]  # how messages name it ("an agents.Agent")

    def __init__(self, factory: Callable[[], A] | None = None, spec: str = "") -> None:
        self._factory = factory
        self.name = f"{self.framework}:{spec}" if spec else self.framework
        self._graph: AgentGraph | None = None

    def tools(self) -> list[Tool]:
        # The user's own agent brings its own tools; the built-ins are for the default agent.
        return [] if self._factory is not None else builtin_tools()

    def tool_names(self) -> frozenset[str]:
        if self._factory is None:
            return BUILTIN_TOOL_NAMES
        return frozenset[str]().union(*self.user_graph().agents.values())

    def user_graph(self) -> AgentGraph:
        """The user's agent graph, walked once (the factory is called once for the tool
        names, the agents, the tools running agents and the handoffs admission checks);
        empty for the default agent."""
        if self._factory is None:
            return _NO_GRAPH
        if self._graph is None:
            self._graph = self.walk(self.build())
        return self._graph

    def agent_tools(self) -> Mapping[str, frozenset[str]]:
        """Each agent of the user's graph and the tools it offers; empty for one agent."""
        agents = self.user_graph().agents
        return agents if len(agents) > 1 else {}

    def runs_agents(self) -> Mapping[str, frozenset[str]]:
        """Each tool of the user's graph that runs agents of it, and the agents it runs:
        admission refuses a step calling two of them unless the steps after it name their
        agent."""
        return self.user_graph().runs_agents

    def agent_handoffs(self) -> Mapping[str, Mapping[str, str]]:
        """Each agent of the user's graph that hands off: its handoff tools, each with the
        agent it passes control to (mutation testing hands off to another)."""
        return self.user_graph().handoffs

    def guardrail_names(self) -> frozenset[str]:
        """The guardrails of every agent of the user's graph, by name (a fixture's
        `guardrails_tripped` names them); none for the default agent."""
        return frozenset[str]().union(*self.user_graph().guardrails.values())

    def declares_instructions(self) -> bool:
        """Whether an agent of the user's graph declares instructions, which the
        conformance rule `instructions` then sees reach its model (mutation testing drops
        them); the default agent declares none."""
        return bool(self.user_graph().instructed)

    def hands_off(self) -> bool:
        """Whether an agent of the user's graph hands off: then a turn may start at the
        agent that answered the last (`next_turn_agent` "last")."""
        return bool(self.agent_handoffs())

    def build(self) -> A:
        """A fresh instance of the user's agent."""
        assert self._factory is not None
        agent = self._factory()
        if not isinstance(agent, self.agent_type):
            said = f"the factory returned {type(agent).__name__}, not {self.agent_label}"
            other = framework_of(agent)
            if other is not None and other != self.framework:
                # The right factory under the wrong prefix: name the spec that runs it.
                user = self.name.partition(":")[2]
                said += f" but {FRAMEWORK_LABELS[other]}: use {other}:{user}"
            raise TypeError(said)
        return agent

    def walk(self, agent: A) -> AgentGraph:
        """The graph of the user's agent; by default one agent with `user_tool_names`."""
        return AgentGraph({self.name: frozenset(self.user_tool_names(agent))})

    def user_tool_names(self, agent: A) -> list[str]:
        """The names of the tools the user's agent registers (checked at admission)."""
        raise NotImplementedError


class LoopAdapter:
    """A user's own loop: `factory(context)` returns an `AgentSession`."""

    def __init__(self, name: str, factory: Callable[[AgentContext], AgentSession]) -> None:
        self.name = name
        self._factory = factory

    def tools(self) -> list[Tool]:
        return builtin_tools()

    def start(self, context: AgentContext) -> AgentSession:
        session = self._factory(context)
        if not _is_session(session):
            said = (
                f"agent factory {self.name!r} returned {type(session).__name__}, "
                "which has no run_turn(user_input) method"
            )
            framework = framework_of(session)
            if framework is not None:
                said += (
                    f": it is {FRAMEWORK_LABELS[framework]}, whose factory takes no "
                    f"arguments: {framework}:{self.name} names one"
                )
            raise TypeError(said)
        return session


# The classes whose instances are sessions by their class alone (`run_turn` defined on
# the class): a protocol's isinstance check walks its members on every call, costly
# beside an own loop's case, for an answer that is the same for every case of a run.
_SESSION_CLASSES: set[type] = set()


def _is_session(value: object) -> bool:
    kind = type(value)
    if kind in _SESSION_CLASSES:
        return True
    if not isinstance(value, AgentSession):
        return False
    if getattr(kind, "run_turn", None) is not None:
        _SESSION_CLASSES.add(kind)
    return True


# How long a session's `aclose` may take (an MCP server's cleanup is bounded by its own
# timeout below this): past it, the case goes on without waiting.
SESSION_CLOSE_SECONDS = 30.0


async def close_session(
    session: object, bounded: Callable[[float, Awaitable[Any]], Awaitable[Any]]
) -> None:
    """The session's optional `aclose()` (what it holds for the case, such as connections
    to MCP servers, let go), whatever the case came to; bounded by `bounded(seconds,
    awaitable)` (the runner's clock), and its failure is no run error: the case's turns are
    over and recorded."""
    close = getattr(session, "aclose", None)
    if not callable(close):
        return
    with contextlib.suppress(Exception):
        result = close()
        if inspect.isawaitable(result):
            await bounded(SESSION_CLOSE_SECONDS, result)
