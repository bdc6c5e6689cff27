"""Agents the user's own code runs inside a case: an SDK function tool, guardrail or tool
guardrail that runs another agent itself (`await Runner.run(agent, ...)`, `run_sync`,
`run_streamed`: the SDK's "agents as tools" custom pattern, its guardrail pattern).

`Runner` hands every run to the SDK's default agent runner. The harness puts one of its own
in front of it, once per process: while a case runs (`case_running`, a context variable, so
it reaches the tasks and threads the SDK starts for tools and never another case), a run
starts at the agent's case copy (`GraphCopy.runs`: its tools recorded under its name, its
model the harness's, its model calls the script's next steps) with the harness's run
configuration merged into the user's; outside a case every run goes to the runner it
replaced, unchanged, so other users of the SDK in the process see no difference.

Only `harness.agents.frameworks.openai_agents` imports it: it needs the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from agents import Agent
from agents.run import AgentRunner, get_default_agent_runner, set_default_agent_runner
from agents.tracing import setup as tracing_setup

from harness.agents.sdk_graph import RUN_CONFIG, GraphCopy
from harness.runtime import owner

_CASE: ContextVar[GraphCopy | None] = ContextVar("zeroclaw_sdk_case", default=None)

R = TypeVar("R")


class CaseRunner(AgentRunner):
    """The SDK's default agent runner while a case runs: each run starts at the agent's
    case copy, with the harness's model; any other run goes to `replaced` as it was."""

    def __init__(self, replaced: AgentRunner) -> None:
        self.replaced = replaced

    async def run(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        case = _CASE.get()
        if case is None:
            return await self.replaced.run(starting_agent, input, **kwargs)
        with _within(case, starting_agent, kwargs) as agent:
            return await self.replaced.run(agent, input, **kwargs)

    def run_sync(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        return self._start(self.replaced.run_sync, starting_agent, input, kwargs)

    def run_streamed(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        # The run goes on in a task the SDK starts here, which takes this context along.
        return self._start(self.replaced.run_streamed, starting_agent, input, kwargs)

    def _start(
        self, start: Callable[..., R], agent: Agent[Any], input: Any, kwargs: dict[str, Any]
    ) -> R:
        case = _CASE.get()
        if case is None:
            return start(agent, input, **kwargs)
        with _within(case, agent, kwargs) as copy:
            return start(copy, input, **kwargs)


@contextmanager
def _within(case: GraphCopy, agent: Agent[Any], kwargs: dict[str, Any]) -> Iterator[Agent[Any]]:
    """The case's copy of `agent` to run, `kwargs`' run configuration made the harness's,
    and that configuration noted for the handoffs of the run (how they pass the history)."""
    setup = case.runs(agent, kwargs.get("run_config"))
    kwargs["run_config"] = setup.config
    token = RUN_CONFIG.set(setup.config)
    try:
        yield setup.agent
    finally:
        RUN_CONFIG.reset(token)


def install() -> None:
    """Put the case runner in front of the SDK's default agent runner, once per process."""
    current = get_default_agent_runner()
    if not isinstance(current, CaseRunner):
        set_default_agent_runner(CaseRunner(current))


@contextmanager
def case_running(case: GraphCopy) -> Iterator[None]:
    """Within the block (a turn of the case), runs the user's code starts run `case`'s
    copies with the harness's model."""
    token = _CASE.set(case)
    try:
        yield
    finally:
        _CASE.reset(token)


# Whether `offline_tracing` has looked, in this process (a worker sees its server's answer).
_LOOKED = [False]


def offline_tracing() -> None:
    """In a process the harness owns, the SDK's trace provider made one with no processor,
    where nothing had made one yet.

    Every run the harness starts has tracing disabled (a harness run stays offline), yet the
    SDK's first run of a process builds its default provider all the same, and with it the
    default processor's exporter: an HTTP client, and the connection stack it imports
    (~70 ms of CPU, on the critical path of every worker pool's start), for spans it is
    never given. A provider someone set (the user's code, at import) is left as it is, and
    where the harness does not own the process (a test session calling it) nothing is set:
    what runs after the harness there finds the SDK's default as it would have."""
    if _LOOKED[0]:
        return
    _LOOKED[0] = True
    if owner.owned() and getattr(tracing_setup, "GLOBAL_TRACE_PROVIDER", True) is None:
        from agents.tracing.provider import DefaultTraceProvider

        tracing_setup.set_trace_provider(DefaultTraceProvider())
