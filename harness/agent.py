"""The agent adapter protocol and the registry that resolves an `agent` setting.

An adapter builds a fresh agent for one case from the harness's model boundary and tool
registry, runs one user turn at a time through the agent's own loop, and returns the
turn's final text. The harness never re-implements a framework's loop.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from harness.backend import ModelBoundary
from harness.case import AgentSurface
from harness.tools import BUILTIN_TOOL_NAMES, Tool, ToolRegistry, builtin_tools


class AgentContext:
    """What an adapter gets for one case; everything in it is fresh for that case.

    The workspace is a private temporary directory, created on first use (most replay
    cases never touch it) and removed by the runner after grading.
    """

    def __init__(self, case_id: str, model: ModelBoundary, tools: ToolRegistry) -> None:
        self.case_id = case_id
        self.model = model
        self.tools = tools
        self._workspace: Path | None = None

    @property
    def workspace(self) -> Path:
        if self._workspace is None:
            self._workspace = Path(tempfile.mkdtemp(prefix="zeroclaw-eval-"))
        return self._workspace

    def remove_workspace(self) -> None:
        if self._workspace is not None:
            shutil.rmtree(self._workspace, ignore_errors=True)


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


class FrameworkAdapter(Generic[A]):
    """What the built-in framework adapters share: the default agent with the built-in
    tools, or the user's own agent, built per case by `factory`, with its own tools."""

    framework: ClassVar[str]
    agent_type: ClassVar[type]  # what `factory` must return (e.g. agents.Agent)
    agent_label: ClassVar[str]  # how messages name it ("an agents.Agent")

    def __init__(self, factory: Callable[[], A] | None = None, spec: str = "") -> None:
        self._factory = factory
        self.name = f"{self.framework}:{spec}" if spec else self.framework
        self._names: frozenset[str] | None = None

    def tools(self) -> list[Tool]:
        # The user's own agent brings its own tools; the built-ins are for the default agent.
        return [] if self._factory is not None else builtin_tools()

    def tool_names(self) -> frozenset[str]:
        if self._factory is None:
            return BUILTIN_TOOL_NAMES
        if self._names is None:
            self._names = frozenset(self.user_tool_names(self.build()))
        return self._names

    def build(self) -> A:
        """A fresh instance of the user's agent."""
        assert self._factory is not None
        agent = self._factory()
        if not isinstance(agent, self.agent_type):
            raise TypeError(f"the factory returned {type(agent).__name__}, not {self.agent_label}")
        return agent

    def user_tool_names(self, agent: A) -> list[str]:
        """The names of the tools the user's agent registers (checked at admission)."""
        raise NotImplementedError


class AgentError(Exception):
    """The `agent` setting cannot be resolved to an adapter."""


# Built-in adapters, imported only when chosen so that importing the harness never imports
# an agent framework.
BUILTIN_AGENTS: dict[str, str] = {
    "openai-agents": "harness.agents.openai_agents:OpenAIAgentsAdapter",
    "pydantic-ai": "harness.agents.pydantic_ai:PydanticAIAdapter",
}
DEFAULT_AGENT = "openai-agents"


class LoopAdapter:
    """A user's own loop: `factory(context)` returns an `AgentSession`."""

    def __init__(self, name: str, factory: Callable[[AgentContext], AgentSession]) -> None:
        self.name = name
        self._factory = factory

    def tools(self) -> list[Tool]:
        return builtin_tools()

    def start(self, context: AgentContext) -> AgentSession:
        session = self._factory(context)
        if not isinstance(session, AgentSession):
            raise TypeError(
                f"agent factory {self.name!r} returned {type(session).__name__}, "
                "which has no run_turn(user_input) method"
            )
        return session


def resolve_agent(spec: str) -> AgentAdapter:
    """An adapter for `spec`: a built-in name, or `module:attribute` of the user's code.

    The attribute may be an `AgentAdapter` (or a class of one), or a factory taking an
    `AgentContext` and returning an `AgentSession`.
    """
    spec = spec.strip()
    if spec in BUILTIN_AGENTS:
        target = _import(BUILTIN_AGENTS[spec], spec)
        return target()  # type: ignore[no-any-return]
    framework, _, user = spec.partition(":")
    if framework in BUILTIN_AGENTS and user:
        # `framework:module:factory`: the user's own agent of a supported framework.
        adapter_class = _import(BUILTIN_AGENTS[framework], framework)
        built = _import(user, spec)
        factory = built if callable(built) and not _is_agent_object(built) else lambda: built
        adapter = adapter_class(factory=factory, spec=user)
        # Build the user's agent once now (its tool names are needed for admission anyway):
        # a factory that raises or returns the wrong type is a clear error, not a traceback.
        try:
            adapter.tool_names()
        except Exception as exc:
            raise AgentError(f"agent {spec!r}: {type(exc).__name__}: {exc}") from None
        return adapter  # type: ignore[no-any-return]
    if ":" not in spec:
        known = ", ".join(sorted(BUILTIN_AGENTS))
        raise AgentError(
            f"unknown agent {spec!r}: use a built-in agent ({known}) or 'module:factory'"
        )
    target = _import(spec, spec)
    if inspect.isclass(target):
        try:
            instance = target()
        except Exception as exc:
            raise AgentError(f"agent {spec!r}: {target.__name__}() failed: {exc}") from None
        if isinstance(instance, AgentAdapter):
            return instance
        raise AgentError(f"agent {spec!r}: class {target.__name__} is not an AgentAdapter")
    if isinstance(target, AgentAdapter):
        return target
    if callable(target):
        return LoopAdapter(spec, target)
    raise AgentError(f"agent {spec!r}: {type(target).__name__} is neither an adapter nor callable")


def _is_agent_object(value: Any) -> bool:
    # A framework agent instance given directly instead of a factory (SDK agents are not
    # callable; pydantic-ai agents are not either, but guard by module to be explicit).
    module = type(value).__module__
    return module.startswith(("agents.", "pydantic_ai."))


def _import(path: str, spec: str) -> Any:
    module_name, _, attr = path.rpartition(":")
    if not module_name or not attr:
        raise AgentError(f"agent {spec!r}: expected 'module:attribute'")
    # Console scripts do not put the working directory on sys.path; a project's own
    # agent module lives there.
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = ""
        if spec in BUILTIN_AGENTS:
            hint = f" (install the extra: pip install 'zeroclaw-eval[{spec}]')"
        raise AgentError(f"agent {spec!r}: cannot import {module_name}: {exc}{hint}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise AgentError(f"agent {spec!r}: module {module_name} has no {attr!r}") from None


def agent_surface(adapter: AgentAdapter) -> AgentSurface:
    """The adapter's name and the tools a fixture may script calls to: `tool_names()` when
    the adapter has one (an agent bringing its own tools), else its registered tools."""
    names = getattr(adapter, "tool_names", None)
    tools = names() if callable(names) else frozenset(t.name for t in adapter.tools())
    return AgentSurface(adapter.name, frozenset(tools))


def surface_of(spec: str) -> AgentSurface:
    """What admission needs of `spec`, without importing a built-in agent's framework."""
    spec = spec.strip()
    if spec in BUILTIN_AGENTS:
        return AgentSurface(spec, BUILTIN_TOOL_NAMES)
    return agent_surface(resolve_agent(spec))
