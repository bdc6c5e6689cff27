"""The workers' fork server imports this last: it runs one scripted case through each
built-in agent whose framework the server loaded, so the set-up a framework does lazily on
its first run (schemas, validators, type hints read from annotations) is done once, in the
server, and every worker forked from it starts warm. Without it each worker spent its first
case, a hundred milliseconds or more, on that set-up: on every run, per worker.
Where the server loaded no framework (an own loop), the case runs through an own loop of
its own, which warms the harness's path of a case: its caches and lazy imports.

Best effort: a failure here is dropped (the fork server must start, and a worker that is
not warm is only slower), and `warm` is what tests call to see that it works. The server
forks right after, so nothing here may leave a thread: the case runs on this thread's own
event loop, with one tool that runs in the loop, and touches no file.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

from harness.agents.protocol import AgentContext, LoopAdapter
from harness.agents.registry import BUILTIN_AGENTS, resolve_agent
from harness.defaults import DEFAULT_CASE_TIMEOUT
from harness.fixtures.schema import parse_fixture
from harness.fixtures.suite import Case
from harness.model_boundary import Message, ModelRequest, ToolSchema
from harness.run.runner import CasePlan, replay_backend, run_case, start_case
from harness.runtime import collector, event_loop
from harness.verdict.reports import CaseReport

# A tool call and its answer, graded: the path a replayed case takes, start to verdict
# (a pattern too: RE2, imported on a first pattern, took each worker's first case 3 ms).
FIXTURE = """{
  "model_name": "worker-warm-up",
  "turns": [{
    "user_input": "Echo warm.",
    "steps": [
      {"response": {"type": "tool_calls", "tool_calls": [
        {"id": "c1", "name": "echo", "arguments": {"message": "warm"}}]}},
      {"response": {"type": "text", "content": "warm"}}
    ]
  }],
  "expects": {
    "exact_tool_calls": 1,
    "tool_results_contain": [{"tool": "echo", "needle": "warm"}],
    "response_contains": ["warm"],
    "response_matches": ["\\\\Awarm\\\\z"]
  }
}"""


# The agents warmed in this process (a worker sees the list of the server it forked from);
# `HARNESS` for the harness's own path, warmed through an own loop where no framework was.
WARMED: list[str] = []
HARNESS = "harness"


class _EchoLoop:
    """An own loop, as `docs/agents.md` writes one: model calls and tool dispatches through
    the case's context only, so the harness's whole path of a replayed case runs."""

    def __init__(self, context: AgentContext) -> None:
        self.context = context
        self.messages: list[Message] = [Message(role="system", content="Echo.")]
        self.tools = tuple(
            ToolSchema(tool.name, tool.description, tool.parameters)
            for tool in context.tools.tools.values()
        )

    async def run_turn(self, user_input: str) -> str:
        self.messages.append(Message(role="user", content=user_input))
        while True:
            step = await self.context.model.respond(
                ModelRequest(messages=tuple(self.messages), tools=self.tools)
            )
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                outcome = await self.context.tools.dispatch(call.name, call.arguments)
                self.messages.append(
                    Message(role="tool", content=outcome.result, tool_call_id=call.id)
                )


def loaded_agents() -> list[str]:
    """The built-in agents whose adapter module this process has imported."""
    return [name for name, target in BUILTIN_AGENTS.items() if target.split(":")[0] in sys.modules]


def warm(agents: list[str]) -> list[CaseReport]:
    """Run the warm-up case once through each of `agents` (built-in agent names, or
    `HARNESS`: an own loop, which warms the harness's own path of a case: the caches and
    the modules a first case would otherwise fill and import in every worker)."""
    trace = parse_fixture(FIXTURE, "worker-warm-up")
    case = Case(trace, Path("worker-warm-up.json"), FIXTURE)
    reports = []
    for name in agents:
        adapter = LoopAdapter(HARNESS, _EchoLoop) if name == HARNESS else resolve_agent(name)
        plan = CasePlan(adapter, "replay", replay_backend, None, DEFAULT_CASE_TIMEOUT, Path.cwd())
        progress = start_case(case, plan, "worker-warm-up.json")
        report = event_loop.run(run_case(progress, plan))
        if report.passed:
            WARMED.append(name)
        reports.append(report)
    return reports


def _settle() -> None:
    # A thread a framework started and left would be copied half-done into every worker.
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(1.0)


def _imported_by_fork_server() -> bool:
    """Whether the code importing this module (the caller's caller, past the import
    machinery) is the fork server's own `main` importing its preloads. A worker runs
    below that `main` too, but imports from its own code."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back  # type: ignore[assignment]
    return (
        frame is not None
        and frame.f_code.co_name == "main"
        and frame.f_code.co_filename.endswith("forkserver.py")
    )


if _imported_by_fork_server():
    # What the server holds now (the harness, the framework: the heap it was forked or
    # started with) is never garbage: left to the collector's frozen generation, so that
    # the collections the warm-up's case sets off walk only what it made, not the whole
    # framework again (a full collection of the OpenAI Agents SDK's heap is tens of ms).
    collector.freeze_for_good()
    with contextlib.suppress(Exception):  # a cold worker is only slower
        # A built-in agent's case runs the harness's own path too: the own loop is
        # needed only where no framework was loaded.
        warm(loaded_agents() or [HARNESS])
    _settle()
