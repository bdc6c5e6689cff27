"""Admission: the rules a parsed fixture must meet before it may run. Fails closed: a
fixture either becomes a case that can fail, or yields every problem found in it."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterator
from itertools import chain
from pathlib import PurePosixPath
from typing import Any

import msgspec

from harness.agent import AgentSurface
from harness.builtin_toolset import COMMAND_TOOL_REFUSAL, runs_commands
from harness.expectations.base import Context, is_blank
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


def admit(
    trace: LlmTrace, file: str, mode: Mode, agent: AgentSurface, *, finite: bool = False
) -> list[Problem]:
    """Every admission problem of one parsed fixture, the empty-run vacuity check last
    (only once every other rule holds); an empty list admits it. `finite`: msgspec decoded
    the trace, so it holds no NaN or infinity, and none is looked for."""
    # One grading of the empty run answers both the assertion count and the vacuity check.
    empty = _empty_run(trace)
    problems = _trace_problems(trace, file, mode, agent, empty, finite)
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
    return _trace_problems(trace, file, mode, agent, _empty_run(trace), False)


class _Surface:
    """What admission asks of one agent in one mode, each answer worked out once: whether
    a tool name may be used (a suite uses a few names, in every call of every fixture),
    and the context of a script's shape (a suite's fixtures have a few shapes)."""

    __slots__ = ("agent", "contexts", "mode", "names")

    def __init__(self, mode: Mode, agent: AgentSurface) -> None:
        self.mode = mode
        self.agent = agent
        self.names: dict[str, str | None] = {}
        self.contexts: dict[tuple[int | None, ...], Context] = {}

    def tool_problem(self, name: str) -> str | None:
        """Why a case may not use the tool `name` with this agent, or None when it may."""
        try:
            return self.names[name]
        except KeyError:
            problem = self.names[name] = _tool_name_problem(name, self.agent)
            return problem

    def context(self, trace: LlmTrace) -> Context:
        """The context of `trace`'s expectations: the steps each turn scripts, for those
        naming a turn or step (live: unknown)."""
        if self.mode == "live":
            steps: tuple[int | None, ...] = (None,) * len(trace.turns)
        else:
            steps = tuple([len(t.steps or ()) for t in trace.turns])
        try:
            return self.contexts[steps]
        except KeyError:
            agent = self.agent
            context = self.contexts[steps] = Context(self.mode, agent.tools, agent.name, steps)
            return context


def _surface(mode: Mode, agent: AgentSurface) -> _Surface:
    # The one a suite asks for each of its fixtures, known by identity (the surface holds
    # its agent, so no other object can have its id meanwhile): hashing the agent for
    # every fixture costs more than what it looks up, and another agent's is made anew.
    last = _LAST[0]
    if last is not None and last.agent is agent and last.mode == mode:
        return last
    _LAST[0] = surface = _Surface(mode, agent)
    return surface


_LAST: list[_Surface | None] = [None]


def _trace_problems(
    trace: LlmTrace,
    file: str,
    mode: Mode,
    agent: AgentSurface,
    empty: EmptyRun | None,
    finite: bool,
) -> list[Problem]:
    # Each rule appends what it finds, in the order the problems are listed; the paths
    # and messages are spelt out only for a problem found.
    problems: list[Problem] = []
    surface = _surface(mode, agent)
    if not trace.turns:
        problems.append(
            Problem(file, "$.turns", "no turns: the agent would never run, so nothing is tested")
        )
    _size_problems(trace, file, problems)
    _id_problems(trace, file, problems)
    if mode != "live" and (
        trace.repeat is not None or trace.cluster is not None or trace.min_pass_rate is not None
    ):
        for key, why in LIVE_ONLY_KEYS.items():
            if getattr(trace, key) is not None:
                problems.append(
                    Problem(file, f"$.{key}", f"applies to live mode only ({why}); remove it")
                )
    if trace.cluster is not None and is_blank(trace.cluster):
        problems.append(Problem(file, "$.cluster", "empty cluster label"))
    if trace.tools:
        problems += _tools_problems(trace.tools, file, surface)
    if trace.setup is not None:
        problems += _setup_problems(trace.setup, file)
    _turn_problems(trace, file, surface, finite, problems)
    expects = trace.expects
    # A tool name refused for its characters gets that one problem, not a kind's as well.
    refused = _expected_tool_problems(expects, file, problems) if expects is not None else ()
    for fault in expects_problems(expects, surface.context(trace), empty):
        if fault.path not in refused:
            problems.append(Problem(file, fault.path, fault.message))
    return problems


def _id_problems(trace: LlmTrace, file: str, problems: list[Problem]) -> None:
    """The case id (and `model_name`, the id when `id` is absent) are shown in every
    report: no character in them may forge or hide text there."""
    # A blank id is the suite's "empty case id".
    problem = unsafe_name_problem("case id", trace.model_name)
    if problem is not None and not is_blank(trace.model_name):
        problems.append(Problem(file, "$.model_name", problem))
    if trace.id is not None:
        problem = unsafe_name_problem("case id", trace.id)
        if problem is not None and not is_blank(trace.id):
            problems.append(Problem(file, "$.id", problem))


@functools.lru_cache(maxsize=1024)
def _unsafe_tool_name(name: str) -> str | None:
    # A blank name is its kind's to refuse; the few names of a suite are asked again and
    # again.
    return None if is_blank(name) else unsafe_name_problem("tool name", name)


def _expected_tool_problems(expects: Expects, file: str, problems: list[Problem]) -> set[str]:
    """Tool names in expectations, refused for their characters as anywhere else; the
    fields refused."""
    lists, entries = _TOOL_LISTS(expects), _TOOL_ENTRIES(expects)
    tools = map(_TOOL, chain.from_iterable(entries))
    every = "".join(chain(chain.from_iterable(lists), tools))
    if every.isascii() and every.isprintable():  # none in any admitted fixture: seen in C
        return set()
    refused: set[str] = set()
    for family, names in zip(TOOL_LISTS, lists, strict=True):
        for i, name in enumerate(names):
            problem = _unsafe_tool_name(name)
            if problem is not None:
                refused.add(field := f"$.expects.{family}[{i}]")
                problems.append(Problem(file, field, problem))
    for family, family_entries in zip(TOOL_ENTRIES, entries, strict=True):
        for i, entry in enumerate(family_entries):
            problem = _unsafe_tool_name(entry.tool)
            if problem is not None:
                refused.add(field := f"$.expects.{family}[{i}].tool")
                problems.append(Problem(file, field, problem))
    return refused


_TOOL_LISTS = operator.attrgetter(*TOOL_LISTS)
_TOOL_ENTRIES = operator.attrgetter(*TOOL_ENTRIES)
_TOOL = operator.attrgetter("tool")


def _size_problems(trace: LlmTrace, file: str, problems: list[Problem]) -> None:
    if len(trace.turns) > MAX_TURNS:
        problems.append(
            Problem(
                file,
                "$.turns",
                f"{len(trace.turns)} turns exceed the limit of {MAX_TURNS}: split the case",
            )
        )
        return  # one problem says it; not one per turn as well
    for t, turn in enumerate(trace.turns):
        if isinstance(turn.steps, list) and len(turn.steps) > MAX_STEPS_PER_TURN:
            problems.append(
                Problem(
                    file,
                    f"$.turns[{t}].steps",
                    f"{len(turn.steps)} steps exceed the limit of {MAX_STEPS_PER_TURN} per "
                    "turn: split the turn or the case",
                )
            )


def _turn_problems(
    trace: LlmTrace, file: str, surface: _Surface, finite: bool, problems: list[Problem]
) -> None:
    # Each tool-call id with where it was first used: (turn, step, call).
    seen_ids: dict[str, tuple[int, int, int]] = {}
    live = surface.mode == "live"
    for t, turn in enumerate(trace.turns):
        if is_blank(turn.user_input):
            problems.append(Problem(file, f"$.turns[{t}].user_input", "blank user input"))
        if live:
            if turn.steps is not msgspec.UNSET:
                problems.append(
                    Problem(
                        file,
                        f"$.turns[{t}].steps",
                        "a live case must not script model steps: the real model answers",
                    )
                )
            continue
        if not turn.steps:
            problems.append(
                Problem(
                    file,
                    f"$.turns[{t}].steps",
                    "no scripted steps: replay has nothing to answer with",
                )
            )
            continue
        for s, step in enumerate(turn.steps):
            if isinstance(step.response, ToolCallsResponse):
                at = (t, s)
                _call_problems(step.response, at, trace, file, surface, finite, seen_ids, problems)


def _calls_at(at: tuple[int, int]) -> str:
    return f"$.turns[{at[0]}].steps[{at[1]}].response.tool_calls"


def _call_problems(
    response: ToolCallsResponse,
    at: tuple[int, int],
    trace: LlmTrace,
    file: str,
    surface: _Surface,
    finite: bool,
    seen_ids: dict[str, tuple[int, int, int]],
    problems: list[Problem],
) -> None:
    if not response.tool_calls:
        problems.append(
            Problem(
                file,
                _calls_at(at),
                "empty list: a tool_calls response must call at least one tool",
            )
        )
    for c, call in enumerate(response.tool_calls):
        if is_blank(call.id):
            problems.append(Problem(file, f"{_calls_at(at)}[{c}].id", "empty tool-call id"))
        elif call.id in seen_ids:
            turn, step, first = seen_ids[call.id]
            problems.append(
                Problem(
                    file,
                    f"{_calls_at(at)}[{c}].id",
                    f"duplicate tool-call id {call.id!r} "
                    f"(first used at {_calls_at((turn, step))}[{first}])",
                )
            )
        else:
            seen_ids[call.id] = (*at, c)
        if not finite:
            arguments = f"{_calls_at(at)}[{c}].arguments"
            problems += _non_finite_problems(call.arguments, arguments, file)
        problem = surface.tool_problem(call.name)
        if problem is None and trace.tools is not None and call.name not in trace.tools:
            allowed = ", ".join(escaped(t) for t in trace.tools) or "none"
            problem = (
                f"tool {call.name!r} is not among the case's tools ($.tools: {allowed}); "
                "add it there or remove the call"
            )
        if problem is not None:
            problems.append(Problem(file, f"{_calls_at(at)}[{c}].name", problem))


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


def _tool_name_problem(name: str, agent: AgentSurface) -> str | None:
    """Why a case may not use the tool `name` with `agent`, or None when it may."""
    unsafe = _unsafe_tool_name(name)
    if unsafe is not None:
        return unsafe
    if runs_commands(name):
        return f"tool {name!r} is refused: {COMMAND_TOOL_REFUSAL}"
    if name not in agent.tools:
        tools = ", ".join(sorted(agent.tools)) or "none"
        return f"tool {name!r} is not registered by agent '{agent.name}' (its tools: {tools})"
    return None


def _tools_problems(tools: list[str], file: str, surface: _Surface) -> list[Problem]:
    """The case's `tools`: the names it may use, each a real, safe tool of the agent."""
    problems = []
    first: dict[str, int] = {}
    for i, name in enumerate(tools):
        where = f"$.tools[{i}]"
        if is_blank(name):
            problems.append(Problem(file, where, "empty tool name"))
            continue
        if name in first:
            problems.append(
                Problem(file, where, f"duplicate tool {name!r} (also $.tools[{first[name]}])")
            )
            continue
        first[name] = i
        problem = surface.tool_problem(name)
        if problem is not None:
            problems.append(Problem(file, where, problem))
    return problems


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
