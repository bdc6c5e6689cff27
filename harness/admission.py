"""Admission: the rules a parsed fixture must meet before it may run. Fails closed: a
fixture either becomes a case that can fail, or yields every problem found in it."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import msgspec

from harness.agent import AgentSurface
from harness.builtin_toolset import COMMAND_TOOL_REFUSAL, runs_commands
from harness.expectations.base import Context
from harness.expectations.registry import (
    EmptyRun,
    Expects,
    empty_run,
    expects_problems,
    passes_empty_run,
)
from harness.expectations.workspace_files import workspace_path_problem
from harness.fixture import LlmTrace, Setup, ToolCallsResponse
from harness.json_paths import child_path
from harness.modes import Mode
from harness.problems import Problem, escaped, unsafe_name_problem
from harness.workspace import normal_path

# Keys of live mode: a replay is deterministic, so repeating it (or asking for a share of
# passing runs) measures nothing; refused, not ignored, so a case never looks like it does
# something it does not.
LIVE_ONLY_KEYS = {
    "repeat": "a replay is deterministic: every repetition would give the same verdict",
    "cluster": "clusters group the repeated live cases of the suite's interval",
    "min_pass_rate": "a replay is deterministic: its runs all pass or all fail",
}
# A case runs its turns one after another, each bounded by the turn timeout: without a cap a
# 10,000-turn fixture could hold a CI job for hours. Real cases stay far below these.
MAX_TURNS = 100
MAX_STEPS_PER_TURN = 100
# The expectations that name tools: lists of names, and lists of entries with a `tool`.
TOOL_LISTS = ("tools_used", "tools_not_used", "tools_offered", "tools_not_offered")
TOOL_ENTRIES = ("tool_arguments_contain", "tool_results_contain")
NON_FINITE = (
    "not a finite number (NaN, Infinity, or a literal such as 1e999 that reads as infinity): "
    "JSON has no such number, so no model could send it"
)
EMPTY_RUN_PASSES = (
    "every check passes against an empty run (no response, no tool calls): "
    "add a check only a working agent satisfies"
)


def admit(trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface) -> list[Problem]:
    """Every admission problem of one parsed fixture, the empty-run vacuity check last
    (only once every other rule holds); an empty list admits it."""
    # One grading of the empty run answers both the assertion count and the vacuity check.
    empty = _empty_run(trace)
    problems = list(_trace_problems(trace, file, mode, agent, empty))
    if not problems and (empty is None or empty.passes):
        problems.append(Problem(file, "$.expects", EMPTY_RUN_PASSES))
    return problems


def _empty_run(trace: LlmTrace) -> EmptyRun | None:
    if trace.expects is None:
        return None
    return empty_run(trace.expects, trace.setup.workspace_files if trace.setup else {})


def empty_run_passes(trace: LlmTrace) -> bool:
    """True when `trace` passes against a run that did nothing (no response, no calls, no
    tokens, a workspace holding only its setup files): it cannot tell a working agent from
    a dead one."""
    setup = trace.setup.workspace_files if trace.setup is not None else {}
    return passes_empty_run(trace.expects, setup)


def check_trace(trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface) -> list[Problem]:
    """Every semantic admission rule for one parsed fixture; an empty list admits it."""
    return list(_trace_problems(trace, file, mode, agent, _empty_run(trace)))


def _trace_problems(
    trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface, empty: EmptyRun | None
) -> Iterator[Problem]:
    if not trace.turns:
        yield Problem(file, "$.turns", "no turns: the agent would never run, so nothing is tested")
    yield from _size_problems(trace, file)
    yield from _id_problems(trace, file)
    if mode != "live":
        for key, why in LIVE_ONLY_KEYS.items():
            if getattr(trace, key) is not None:
                yield Problem(file, f"$.{key}", f"applies to live mode only ({why}); remove it")
    if trace.cluster is not None and not trace.cluster.strip():
        yield Problem(file, "$.cluster", "empty cluster label")
    yield from _tools_problems(trace.tools, file, agent)
    if trace.setup is not None:
        yield from _setup_problems(trace.setup, file)
    yield from _turn_problems(trace, file, mode, agent)
    # A tool name refused for its characters gets that one problem, not a kind's as well.
    unsafe = list(_expected_tool_problems(trace.expects, file))
    yield from unsafe
    refused = {p.field for p in unsafe}
    # The steps each turn scripts, for expectations naming a turn or step (live: unknown).
    steps = tuple(None if mode == "live" else len(t.steps or ()) for t in trace.turns)
    context = Context(mode, agent.tools, agent.name, steps)
    for fault in expects_problems(trace.expects, context, empty):
        if fault.path not in refused:
            yield Problem(file, fault.path, fault.message)


def _id_problems(trace: LlmTrace, file: str) -> Iterator[Problem]:
    """The case id (and `model_name`, the id when `id` is absent) are shown in every
    report: no character in them may forge or hide text there."""
    for field, value in (("$.model_name", trace.model_name), ("$.id", trace.id)):
        if value is None or not value.strip():
            continue  # a blank id is the suite's "empty case id"
        problem = unsafe_name_problem("case id", value)
        if problem is not None:
            yield Problem(file, field, problem)


def _expected_tool_problems(expects: Expects | None, file: str) -> Iterator[Problem]:
    """Tool names in expectations, refused for their characters as anywhere else (a blank
    one is its kind's to refuse)."""
    if expects is None:
        return
    for family in TOOL_LISTS:
        for i, name in enumerate(getattr(expects, family)):
            problem = unsafe_name_problem("tool name", name)
            if problem is not None and name.strip():
                yield Problem(file, f"$.expects.{family}[{i}]", problem)
    for family in TOOL_ENTRIES:
        for i, entry in enumerate(getattr(expects, family)):
            problem = unsafe_name_problem("tool name", entry.tool)
            if problem is not None and entry.tool.strip():
                yield Problem(file, f"$.expects.{family}[{i}].tool", problem)


def _size_problems(trace: LlmTrace, file: str) -> Iterator[Problem]:
    if len(trace.turns) > MAX_TURNS:
        yield Problem(
            file,
            "$.turns",
            f"{len(trace.turns)} turns exceed the limit of {MAX_TURNS}: split the case",
        )
        return  # one problem says it; not one per turn as well
    for t, turn in enumerate(trace.turns):
        if isinstance(turn.steps, list) and len(turn.steps) > MAX_STEPS_PER_TURN:
            yield Problem(
                file,
                f"$.turns[{t}].steps",
                f"{len(turn.steps)} steps exceed the limit of {MAX_STEPS_PER_TURN} per turn: "
                "split the turn or the case",
            )


def _turn_problems(
    trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface
) -> Iterator[Problem]:
    seen_ids: dict[str, str] = {}
    for t, turn in enumerate(trace.turns):
        where = f"$.turns[{t}]"
        if not turn.user_input.strip():
            yield Problem(file, f"{where}.user_input", "blank user input")
        if mode == "live":
            if turn.steps is not msgspec.UNSET:
                yield Problem(
                    file,
                    f"{where}.steps",
                    "a live case must not script model steps: the real model answers",
                )
            continue
        if not turn.steps:
            yield Problem(
                file, f"{where}.steps", "no scripted steps: replay has nothing to answer with"
            )
            continue
        for s, step in enumerate(turn.steps):
            if isinstance(step.response, ToolCallsResponse):
                at = f"{where}.steps[{s}].response.tool_calls"
                yield from _call_problems(step.response, at, trace, file, agent, seen_ids)


def _call_problems(
    response: ToolCallsResponse,
    at: str,
    trace: LlmTrace,
    file: str,
    agent: AgentSurface,
    seen_ids: dict[str, str],
) -> Iterator[Problem]:
    if not response.tool_calls:
        yield Problem(file, at, "empty list: a tool_calls response must call at least one tool")
    for c, call in enumerate(response.tool_calls):
        where = f"{at}[{c}]"
        if not call.id.strip():
            yield Problem(file, f"{where}.id", "empty tool-call id")
        elif call.id in seen_ids:
            yield Problem(
                file,
                f"{where}.id",
                f"duplicate tool-call id {call.id!r} (first used at {seen_ids[call.id]})",
            )
        else:
            seen_ids[call.id] = where
        yield from _non_finite_problems(call.arguments, f"{where}.arguments", file)
        problem = _tool_name_problem(call.name, agent)
        if problem is None and trace.tools is not None and call.name not in trace.tools:
            allowed = ", ".join(escaped(t) for t in trace.tools) or "none"
            problem = (
                f"tool {call.name!r} is not among the case's tools ($.tools: {allowed}); "
                "add it there or remove the call"
            )
        if problem is not None:
            yield Problem(file, f"{where}.name", problem)


def _non_finite_problems(arguments: dict[str, Any], at: str, file: str) -> Iterator[Problem]:
    """NaN and the infinities in scripted arguments: Python's `json` reads `NaN` and
    `Infinity`, and `1e999` as infinity, but JSON has no such number, so no model could
    send them and every encoder after this one would have to guess what to write."""
    stack: list[tuple[str, Any]] = [(at, arguments)]
    while stack:
        path, value = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, float) and not math.isfinite(item):
                where = f"{path}[{key}]" if isinstance(key, int) else child_path(path, key)
                yield Problem(file, where, NON_FINITE)
            elif isinstance(item, (dict, list)):
                where = f"{path}[{key}]" if isinstance(key, int) else child_path(path, key)
                stack.append((where, item))


@functools.lru_cache(maxsize=1024)
def _tool_name_problem(name: str, agent: AgentSurface) -> str | None:
    """Why a case may not use the tool `name` with `agent`, or None when it may. Asked
    for every call of every fixture, of the few names a suite uses: answered once each."""
    unsafe = unsafe_name_problem("tool name", name) if name.strip() else None
    if unsafe is not None:
        return unsafe
    if runs_commands(name):
        return f"tool {name!r} is refused: {COMMAND_TOOL_REFUSAL}"
    if name not in agent.tools:
        tools = ", ".join(sorted(agent.tools)) or "none"
        return f"tool {name!r} is not registered by agent '{agent.name}' (its tools: {tools})"
    return None


def _tools_problems(tools: list[str] | None, file: str, agent: AgentSurface) -> Iterator[Problem]:
    """The case's `tools`: the names it may use, each a real, safe tool of the agent."""
    first: dict[str, int] = {}
    for i, name in enumerate(tools or ()):
        where = f"$.tools[{i}]"
        if not name.strip():
            yield Problem(file, where, "empty tool name")
            continue
        if name in first:
            yield Problem(file, where, f"duplicate tool {name!r} (also $.tools[{first[name]}])")
            continue
        first[name] = i
        problem = _tool_name_problem(name, agent)
        if problem is not None:
            yield Problem(file, where, problem)


def _setup_problems(setup: Setup, file: str) -> Iterator[Problem]:
    """Setup files: each path inside the workspace, no two naming the same file, and no
    file standing where another needs a directory."""
    at = "$.setup.workspace_files"
    first: dict[str, str] = {}
    for relative in setup.workspace_files:
        where = child_path(at, relative)
        problem = workspace_path_problem(relative)
        if problem is not None:
            yield Problem(file, where, problem)
            continue
        normal = normal_path(relative)
        if normal in first:
            yield Problem(
                file,
                where,
                f"names the same file as {first[normal]!r}: one would overwrite the other",
            )
            continue
        first[normal] = relative
    for normal, relative in first.items():
        for parent in PurePosixPath(normal).parents:
            if parent.as_posix() in first:
                yield Problem(
                    file,
                    child_path(at, relative),
                    f"needs {parent.as_posix()!r} to be a directory, but it is also a setup "
                    f"file ({first[parent.as_posix()]!r})",
                )
                break
