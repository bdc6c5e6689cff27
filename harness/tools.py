"""The tool boundary: a registry that dispatches tools and records every dispatch."""

from __future__ import annotations

import functools
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.record import RecordedCall

ToolFunction = Callable[[dict[str, Any]], "str | Awaitable[str]"]


class ToolFailure(Exception):
    """Raised by a tool to report failure; its text is what the model is told."""


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call: its model-facing schema and its implementation."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: ToolFunction


@dataclass(frozen=True)
class ToolOutcome:
    result: str
    success: bool


def canonical_arguments(arguments: Any) -> str:
    """Compact JSON with sorted keys and non-ASCII kept, the recorded form of arguments."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class ToolRegistry:
    """The tools of one case, and the record of every dispatch made through them."""

    tools: dict[str, Tool] = field(default_factory=dict)
    calls: list[RecordedCall] = field(default_factory=list)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> ToolRegistry:
        registry = cls()
        for tool in tools:
            registry.add(tool)
        return registry

    def add(self, tool: Tool) -> None:
        if tool.name in self.tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self.tools[tool.name] = tool

    def names(self) -> frozenset[str]:
        return frozenset(self.tools)

    def record(
        self, name: str, arguments: str, result: str, success: bool, duration_ms: float
    ) -> None:
        """Record a dispatch made outside `dispatch` (a user's own tool wrapped by an adapter)."""
        self.calls.append(RecordedCall(name, arguments, result, success, duration_ms))

    async def dispatch(self, name: str, arguments: str | dict[str, Any]) -> ToolOutcome:
        """Run one tool call and record it; never raises for a tool's own failure."""
        start = time.perf_counter()
        parsed: Any = arguments
        recorded = arguments if isinstance(arguments, str) else canonical_arguments(arguments)
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
                recorded = canonical_arguments(parsed)
            except ValueError as exc:
                parsed = exc  # keep the raw text as recorded: what was sent is what is graded
        outcome = await self._run(name, parsed)
        self.record(
            name, recorded, outcome.result, outcome.success, (time.perf_counter() - start) * 1e3
        )
        return outcome

    async def _run(self, name: str, arguments: Any) -> ToolOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return ToolOutcome(f"unknown tool: {name}", False)
        if isinstance(arguments, ValueError):
            return ToolOutcome(f"invalid JSON arguments for {name}: {arguments}", False)
        if not isinstance(arguments, dict):
            return ToolOutcome(f"arguments for {name} must be a JSON object", False)
        try:
            result = tool.function(arguments)
            if inspect.isawaitable(result):
                result = await result
        except ToolFailure as exc:
            return ToolOutcome(str(exc), False)
        except Exception as exc:  # a tool's bug is the tool's failure, not the harness's
            return ToolOutcome(f"{name} raised {type(exc).__name__}: {exc}", False)
        if result is None:
            return ToolOutcome("", True)  # nothing returned is an empty output, not "None"
        return ToolOutcome(result if isinstance(result, str) else str(result), True)


def _echo(arguments: dict[str, Any]) -> str:
    message = arguments.get("message")
    return message if isinstance(message, str) else "(empty)"


def _fail(arguments: dict[str, Any]) -> str:
    reason = arguments.get("reason")
    raise ToolFailure(reason if isinstance(reason, str) and reason else "(no reason given)")


ECHO = Tool(
    name="echo",
    description="Echoes the input message back as output.",
    parameters={"type": "object", "properties": {"message": {"type": "string"}}},
    function=_echo,
)
FAIL = Tool(
    name="fail",
    description="Always fails with the given reason.",
    parameters={"type": "object", "properties": {"reason": {"type": "string"}}},
    function=_fail,
)


def builtin_tools() -> list[Tool]:
    """The deterministic tools every built-in agent registers: `echo`, `fail`, and the file
    tools confined to the running case's workspace."""
    return list(_builtin_tools())


@functools.cache
def _builtin_tools() -> tuple[Tool, ...]:
    # Built once: the file tools find the running case's workspace when called, so the
    # same Tool objects serve every case (each case still gets its own registry).
    from harness.workspace import workspace_tools  # workspace builds on this module

    return (ECHO, FAIL, *workspace_tools())


BUILTIN_TOOL_NAMES = frozenset({"echo", "fail", "read_file", "write_file", "list_files"})

# Tools that would let a model run commands on the machine. Never registered, never
# admitted: not in a case's `tools`, not in `live_allowed_tools`.
COMMAND_TOOL_NAMES = frozenset(
    {
        "shell",
        "bash",
        "sh",
        "zsh",
        "exec",
        "run_command",
        "execute_command",
        "terminal",
        "subprocess",
        "run_python",
        "python",
        "powershell",
        "cmd",
    }
)


_COMMAND_NAME = re.compile(
    r"(^|_)(run|exec|execute|spawn)_(command|cmd|shell|code|python|bash|script|process)s?$"
)


def runs_commands(name: str) -> bool:
    """True for a tool name that asks for a shell or any command-running tool.

    Deliberately narrower than "contains exec": `execute_query` or `get_command_status`
    are a user's ordinary domain tools, not a way to run programs.
    """
    lowered = name.strip().lower()
    return (
        lowered in COMMAND_TOOL_NAMES
        or "shell" in lowered
        or _COMMAND_NAME.search(lowered) is not None
    )
