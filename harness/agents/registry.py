"""Resolving an `agent` setting to an adapter: a built-in framework agent, the user's own
framework agent, a user's own loop, or a user's own adapter; and what admission needs of it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness.agents.protocol import (
    FRAMEWORK_LABELS,
    AgentAdapter,
    AgentSurface,
    LoopAdapter,
    framework_of,
    framework_of_class,
)
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.errors import HarnessError, describe
from harness.runtime import collector
from harness.runtime.event_loop import CallFailed, CallTimedOut, call_within


class AgentError(HarnessError):
    """The `agent` setting cannot be resolved to an adapter."""


def _builtin_agents() -> dict[str, str]:
    """Every module of `harness.agents.frameworks` is a built-in agent, named after the module
    (`openai_agents` is `openai-agents`) and providing its adapter class as `Adapter`.
    Listed without importing them: importing the harness never imports a framework."""
    package = Path(__file__).resolve().parent / "frameworks"
    return {
        module.name.replace("_", "-"): f"harness.agents.frameworks.{module.name}:Adapter"
        for module in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name)
    }


BUILTIN_AGENTS: dict[str, str] = _builtin_agents()


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
        if factory is built and not inspect.isclass(built) and _needs_arguments(built):
            # Called with none it could only fail, with Python's words instead of these.
            raise AgentError(
                f"agent {spec!r}: {user.rpartition(':')[2]} takes arguments, so it is no "
                f"{framework} agent's factory (that takes none); an own loop's "
                f"factory(context) is named without the prefix: {user!r}"
            )
        adapter = adapter_class(factory=factory, spec=user)
        # Build the user's agent once now (its tool names are needed for admission anyway):
        # a factory that raises or returns the wrong type is a clear error, not a traceback.
        try:
            adapter.tool_names()
        except HarnessError as exc:  # said in the harness's own words (an MCP server's)
            raise AgentError(f"agent {spec!r}: {exc}") from None
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
    of = framework_of(target)
    if of is not None:
        raise AgentError(
            f"agent {spec!r}: {spec.rpartition(':')[2]} is {FRAMEWORK_LABELS[of]}: "
            f"use '{of}:{spec}'"
        )
    if callable(target):
        _refuse_framework_factory(spec, target)
        return LoopAdapter(spec, target)
    raise AgentError(f"agent {spec!r}: {type(target).__name__} is neither an adapter nor callable")


def _refuse_framework_factory(spec: str, factory: Callable[..., Any]) -> None:
    """Refuse a framework agent's factory given as an own loop's: one that takes no
    argument (an own loop's takes the case's context), or whose return annotation names a
    framework's agent. It is called, with none, only then: an own loop's factory is never
    called with arguments it does not take."""
    name = spec.rpartition(":")[2]
    if not _takes_no_arguments(factory):
        return
    loop_factory = not _needs_arguments(factory) and _takes_an_argument(factory)
    if loop_factory and not _annotated_agent(factory):
        return
    try:
        built = factory()
    except Exception as exc:
        if loop_factory:  # a loop's factory after all, whose default could not do
            return
        raise AgentError(
            f"agent {spec!r}: {name} takes no arguments, so it is no own loop's "
            f"factory(context), and calling it failed: {describe(exc)}"
        ) from None
    framework = framework_of(built)
    if framework is not None:
        raise AgentError(
            f"agent {spec!r}: {name} returned {FRAMEWORK_LABELS[framework]}: "
            f"use '{framework}:{spec}'"
        )
    if not loop_factory:
        raise AgentError(
            f"agent {spec!r}: {name} takes no arguments and returned "
            f"{type(built).__name__}: an own loop's factory(context) takes the case's "
            "AgentContext and returns a session; a framework agent's factory returns an "
            f"agent, named with its framework ({', '.join(sorted(BUILTIN_AGENTS))}:{spec})"
        )


def _signature(factory: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or an extension's callable: not told
        return None


def _needs_arguments(factory: Callable[..., Any]) -> bool:
    """Whether calling `factory()` with no arguments cannot bind."""
    signature = _signature(factory)
    if signature is None:
        return False
    try:
        signature.bind()
    except TypeError:
        return True
    return False


def _takes_no_arguments(factory: Callable[..., Any]) -> bool:
    """Whether `factory()` binds (an own loop's factory may still take a context too)."""
    return _signature(factory) is not None and not _needs_arguments(factory)


def _takes_an_argument(factory: Callable[..., Any]) -> bool:
    """Whether `factory(context)` binds: an own loop's factory does."""
    signature = _signature(factory)
    if signature is None:
        return True
    try:
        signature.bind(None)
    except TypeError:
        return False
    return True


def _annotated_agent(factory: Callable[..., Any]) -> bool:
    """Whether `factory`'s return annotation names an agent class (`-> Agent`,
    `-> agents.Agent[Ctx]`, a framework's agent class itself)."""
    signature = _signature(factory)
    annotation = signature.return_annotation if signature is not None else None
    if isinstance(annotation, str):
        return annotation.partition("[")[0].strip().rpartition(".")[2] == "Agent"
    return isinstance(annotation, type) and framework_of_class(annotation) is not None


def _is_agent_object(value: Any) -> bool:
    # A framework agent instance given directly instead of a factory (SDK agents are not
    # callable; pydantic-ai agents are not either, but guard by module to be explicit).
    module = type(value).__module__
    return module.startswith(("agents.", "pydantic_ai."))


def _import(path: str, spec: str) -> Any:
    extra = spec if spec in BUILTIN_AGENTS else None
    return import_attribute(path, f"agent {spec!r}", AgentError, extra=extra)


def import_attribute(
    path: str, said: str, error: type[HarnessError], *, extra: str | None = None
) -> Any:
    """`module:attribute` of the user's code (the working directory on `sys.path`); a
    failure is `error`, its message starting with `said` (what the setting is)."""
    module_name, _, attr = path.rpartition(":")
    if not module_name or not attr:
        raise error(f"{said}: expected 'module:attribute'")
    # Console scripts do not put the working directory on sys.path; a project's own
    # agent module lives there.
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f" (install the extra: pip install 'zeroclaw-eval[{extra}]')" if extra else ""
        raise error(f"{said}: cannot import {module_name}: {exc}{hint}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise error(f"{said}: module {module_name} has no {attr!r}") from None


def resolve_within(agent: str | AgentAdapter, seconds: float) -> tuple[AgentAdapter, AgentSurface]:
    """The adapter for `agent` and its surface, built within `seconds`: importing the
    user's module, calling a factory and listing the tools run the user's code, which may
    block where nothing can interrupt it, so it runs on a daemon thread and is given up on
    (an `AgentError`) once the time is out."""
    # A framework's import makes a hundred thousand objects that live as long as the
    # process and almost no garbage: the collector walking them as they are made is a
    # tenth of the import (~0.15 s for openai-agents). It runs again before any case does.
    with collector.paused():
        if (
            isinstance(agent, str)
            and (framework := agent.strip().partition(":")[0]) in BUILTIN_AGENTS
        ):
            # The framework itself is imported unbounded: slow on a cold start, never a hang.
            _import(BUILTIN_AGENTS[framework], agent.strip())

        def build() -> tuple[AgentAdapter, AgentSurface]:
            adapter = resolve_agent(agent) if isinstance(agent, str) else agent
            return adapter, agent_surface(adapter)

        return _bounded(agent, seconds, build)


def surface_within(agent: str | AgentAdapter, seconds: float) -> AgentSurface:
    """`surface_of` (or the adapter's surface) within `seconds`, as `resolve_within`."""
    if isinstance(agent, str):
        return _bounded(agent, seconds, lambda: surface_of(agent))
    return _bounded(agent, seconds, lambda: agent_surface(agent))


_Built = TypeVar("_Built")


def _bounded(agent: str | AgentAdapter, seconds: float, build: Callable[[], _Built]) -> _Built:
    name = agent if isinstance(agent, str) else getattr(agent, "name", type(agent).__name__)
    try:
        return call_within(seconds, build, name="zeroclaw-eval-agent")
    except CallTimedOut:
        raise AgentError(
            f"agent {name!r}: still not built after {seconds:g}s (its module or factory "
            "blocks; the timeout is --timeout / case_timeout_secs)"
        ) from None
    except CallFailed as failed:
        if isinstance(failed.original, HarnessError):  # an AgentError, an AdmissionError…
            raise failed.original from None
        # The user's module, factory or adapter failing while being built or listing tools.
        raise AgentError(f"agent {name!r}: {describe(failed.original)}") from None


def agent_surface(adapter: AgentAdapter) -> AgentSurface:
    """The adapter's name and the tools a fixture may script calls to: `tool_names()` when
    the adapter has one (an agent bringing its own tools), else its registered tools; and
    each agent of its graph with its tools, the tools that run agents, whether an agent
    hands off and the graph's guardrails, when the adapter says (`agent_tools()`,
    `runs_agents()`, `hands_off()`, `guardrail_names()`)."""
    names = getattr(adapter, "tool_names", None)
    tools = names() if callable(names) else frozenset(t.name for t in adapter.tools())
    graph = getattr(adapter, "agent_tools", None)
    agents = dict(graph()) if callable(graph) else {}
    nested = getattr(adapter, "runs_agents", None)
    runs = dict(nested()) if callable(nested) else {}
    handing = getattr(adapter, "hands_off", None)
    hands_off = bool(handing()) if callable(handing) else False
    named = getattr(adapter, "guardrail_names", None)
    guardrails = frozenset(named()) if callable(named) else None
    return AgentSurface(adapter.name, frozenset(tools), agents, runs, hands_off, guardrails)


def surface_of(spec: str) -> AgentSurface:
    """What admission needs of `spec`, without importing a built-in agent's framework."""
    spec = spec.strip()
    if spec in BUILTIN_AGENTS:
        return AgentSurface(spec, BUILTIN_TOOL_NAMES, guardrails=frozenset())
    return agent_surface(resolve_agent(spec))
