"""The mutants of one case: changes to its script, and faults the harness injects at the
two boundaries it owns. A mutant is killed when the case fails under it; a suite whose
cases kill every boundary mutant would catch a broken loop.

Mutants a case cannot be expected to kill (a fault in tool dispatch for a case that never
calls a tool) are not generated; the reason is kept instead.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from msgspec.structs import replace

from harness.agents.protocol import AgentContext
from harness.fixtures.schema import parse_fixture
from harness.fixtures.suite import Case
from harness.model_boundary import ModelRequest, ModelStep
from harness.mutation.request_mutants import (
    change_model_settings,
    change_tool_schema,
    drop_instructions,
)
from harness.tool_registry import Dispatch, ToolOutcome

Family = Literal["script", "boundary", "judge"]
Prepare = Callable[[AgentContext], None]


@dataclass(frozen=True)
class Mutant:
    """One way to break a case: its family, name, what it does and the fixture field it
    concerns; `case` is the mutated case to run, `prepare` installs a boundary fault."""

    family: Family
    name: str
    description: str
    field: str
    case: Case
    prepare: Prepare | None = None


@dataclass(frozen=True)
class NotGenerated:
    family: Family
    name: str
    reason: str


@dataclass
class Mutants:
    generated: list[Mutant] = field(default_factory=list)
    skipped: list[NotGenerated] = field(default_factory=list)


def mutants_of(
    case: Case,
    faultable: bool,
    handoffs: Mapping[str, Mapping[str, str]] | None = None,
    snapshot: str | None = None,
    instructed: bool = False,
) -> Mutants:
    """Every mutant of `case`, and why the others were not generated. `faultable`: the
    agent's tool calls go through the registry (`dispatch` or `recorded`), so a dispatch
    fault reaches them, whichever agent of a graph makes them. `handoffs`: each agent of
    the graph that hands off, its handoff tools and the agent each leads to. `snapshot`:
    the case's request snapshot for the agent (None: none was taken), which the mutants
    of what the agent shows its model are killed by. `instructed`: an agent of the graph
    declares instructions, which the conformance rule `instructions` sees reach the model
    even without a snapshot."""
    found = Mutants()
    data: dict[str, Any] = json.loads(case.text)
    exempt: dict[str, str] = (data.get("expects") or {}).get("loop_exempt") or {}
    graph = handoffs or {}
    handoff: list[tuple[Family, str, Callable[[Case, dict[str, Any]], Made]]] = [
        ("script", "wrong_handoff", lambda _case, data: _wrong_handoff(data, graph))
    ]
    handoff_tools = {tool for tools in graph.values() for tool in tools}
    # A case without a rubric has no judge to meet: no judge mutant, and nothing to list.
    judged = _JUDGE if (data.get("expects") or {}).get("judge") else []
    unruled = _unruled(instructed, exempt, data)
    shown: list[tuple[Family, str, Callable[[Case, dict[str, Any]], Made]]] = [
        ("boundary", "drop_instructions", lambda _, d: drop_instructions(snapshot, d, unruled)),
        ("boundary", "change_tool_schema", lambda _, d: change_tool_schema(snapshot, d)),
        ("boundary", "change_model_settings", lambda _, d: change_model_settings(snapshot, d)),
    ]
    for family, name, make in _SCRIPT + handoff + _BOUNDARY + shown + judged:
        if family == "boundary" and name in _TOOL_FAULTS and not faultable:
            reason = "the agent runs its own tools: the harness cannot fault their dispatch"
            found.skipped.append(NotGenerated(family, name, reason))
            continue
        undispatched = _undispatched(data, handoff_tools) if name in _TOOL_FAULTS else None
        if undispatched is not None:
            found.skipped.append(NotGenerated(family, name, undispatched))
            continue
        rule = next((r for r in _CAUGHT_BY.get(name, ()) if r in exempt), None)
        if rule is not None:
            reason = f"the case is exempt from loop({rule}): {exempt[rule]}"
            found.skipped.append(NotGenerated(family, name, reason))
            continue
        made = make(case, data)
        if isinstance(made, str):
            found.skipped.append(NotGenerated(family, name, made))
        else:
            description, where, mutated, prepare = made
            mutant_case = _renamed(case, mutated, name, unchanged=mutated is data)
            found.generated.append(Mutant(family, name, description, where, mutant_case, prepare))
    return found


Made = tuple[str, str, dict[str, Any], Prepare | None] | str


def _unruled(instructed: bool, exempt: Mapping[str, str], data: dict[str, Any]) -> str | None:
    """Why the conformance rule `instructions` cannot kill dropped instructions; None: it
    can."""
    if not instructed:
        return "the agent declares no instructions (an own loop declares none)"
    if next(_steps(data), None) is None:
        return "no model request is scripted (a guardrail may end every turn first)"
    if "instructions" in exempt:
        return f"the case is exempt from loop(instructions): {exempt['instructions']}"
    return None


def _renamed(case: Case, data: dict[str, Any], name: str, unchanged: bool) -> Case:
    """The mutated case under its own id, so its report is told from the original's. A
    boundary mutant keeps the script: its admitted trace is reused, not parsed again."""
    mutant_id = f"{case.id}~{name}"
    if unchanged:
        return Case(replace(case.trace, id=mutant_id), case.path, case.text)
    # ASCII: a lone surrogate the fixture escaped stays escaped (raw, no UTF-8 could hold
    # the text, and hashing the mutant for its report would fail).
    text = json.dumps({**data, "id": mutant_id})
    return Case(parse_fixture(text, str(case.path)), case.path, text)


def _steps(data: dict[str, Any]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for t, turn in enumerate(data.get("turns", [])):
        for s, step in enumerate(turn.get("steps") or []):
            yield t, s, step["response"]


def _tool_steps(data: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    return [(t, s, r) for t, s, r in _steps(data) if r.get("type") == "tool_calls"]


# --- script mutants ------------------------------------------------------------------------


def _drop_call(case: Case, data: dict[str, Any]) -> Made:
    steps = _tool_steps(data)
    if not steps:
        return "no scripted tool call"
    t, s, _ = steps[0]
    mutated = copy.deepcopy(data)
    calls = mutated["turns"][t]["steps"][s]["response"]["tool_calls"]
    dropped = calls.pop(0)
    if not calls:  # the step held only that call: the step goes
        del mutated["turns"][t]["steps"][s]
    where = f"$.turns[{t}].steps[{s}].response.tool_calls[0]"
    return f"drop the call {dropped['id']} ({dropped['name']})", where, mutated, None


def _change_argument(case: Case, data: dict[str, Any]) -> Made:
    for t, s, response in _tool_steps(data):
        for c, call in enumerate(response["tool_calls"]):
            for key, value in call["arguments"].items():
                if isinstance(value, str) and value:
                    mutated = copy.deepcopy(data)
                    target = mutated["turns"][t]["steps"][s]["response"]["tool_calls"][c]
                    # Replaced whole: a needle that is part of the old value must not match.
                    target["arguments"][key] = "(a different value)"
                    where = f"$.turns[{t}].steps[{s}].response.tool_calls[{c}].arguments"
                    return f"change {call['id']}'s {key!r} argument", where, mutated, None
    return "no scripted call has a text argument"


def _swap_calls(case: Case, data: dict[str, Any]) -> Made:
    steps = _tool_steps(data)
    for t, s, response in steps:
        if len(response["tool_calls"]) >= 2:
            mutated = copy.deepcopy(data)
            calls = mutated["turns"][t]["steps"][s]["response"]["tool_calls"]
            calls[0], calls[1] = calls[1], calls[0]
            where = f"$.turns[{t}].steps[{s}].response.tool_calls"
            return f"swap the first two calls of turn {t}, step {s}", where, mutated, None
    if len(steps) >= 2:
        (t1, s1, _), (t2, s2, _) = steps[0], steps[1]
        mutated = copy.deepcopy(data)
        first = mutated["turns"][t1]["steps"][s1]["response"]
        second = mutated["turns"][t2]["steps"][s2]["response"]
        first["tool_calls"], second["tool_calls"] = second["tool_calls"], first["tool_calls"]
        where = f"$.turns[{t1}].steps[{s1}].response.tool_calls"
        return "swap the calls of the first two tool steps", where, mutated, None
    return "fewer than two scripted calls"


def _change_final_text(case: Case, data: dict[str, Any]) -> Made:
    last = len(data["turns"]) - 1
    steps = data["turns"][last].get("steps") or []
    if not steps or steps[-1]["response"].get("type") != "text":
        return "the last turn does not end with a text step"
    mutated = copy.deepcopy(data)
    mutated["turns"][last]["steps"][-1]["response"]["content"] = "(a different final answer)"
    where = f"$.turns[{last}].steps[{len(steps) - 1}].response.content"
    return "replace the final text", where, mutated, None


# --- judge mutants: bad final answers, for the case's rubrics to catch ----------------------

UNHELPFUL = "I'm sorry, I can't help with that."
OFF_TASK = (
    "Here is a recipe for banana bread: mash three bananas, mix in flour, sugar and an egg, "
    "and bake for an hour."
)
_NEXT_DIGIT = str.maketrans("0123456789", "1234567890")


def _final_answer(data: dict[str, Any], answer: Callable[[str], str | None], what: str) -> Made:
    last = len(data["turns"]) - 1
    steps = data["turns"][last].get("steps") or []
    if not steps or steps[-1]["response"].get("type") != "text":
        return "the last turn does not end with a text step"
    text = steps[-1]["response"].get("content") or ""
    made = answer(text)
    if made is None:
        return "the final answer has no number to make wrong"
    mutated = copy.deepcopy(data)
    mutated["turns"][last]["steps"][-1]["response"]["content"] = made
    return what, f"$.turns[{last}].steps[{len(steps) - 1}].response.content", mutated, None


def _judge_wrong(case: Case, data: dict[str, Any]) -> Made:
    # Every digit moved on by one: the same answer, its figures wrong.
    def wrong(text: str) -> str | None:
        return text.translate(_NEXT_DIGIT) if any(c.isdigit() for c in text) else None

    return _final_answer(data, wrong, "the final answer with every figure wrong")


def _judge_unhelpful(case: Case, data: dict[str, Any]) -> Made:
    return _final_answer(data, lambda _text: UNHELPFUL, "the final answer replaced by a refusal")


def _judge_off_task(case: Case, data: dict[str, Any]) -> Made:
    return _final_answer(data, lambda _text: OFF_TASK, "the final answer about something else")


def _drop_last_turn(case: Case, data: dict[str, Any]) -> Made:
    if len(data["turns"]) < 2:
        return "one turn only"
    mutated = copy.deepcopy(data)
    mutated["turns"].pop()
    return "drop the last turn", f"$.turns[{len(data['turns']) - 1}]", mutated, None


def _wrong_handoff(data: dict[str, Any], graph: Mapping[str, Mapping[str, str]]) -> Made:
    """The first scripted handoff whose agent could hand off elsewhere, made to another
    agent of the graph: the wrong specialist."""
    if not graph:
        # Only a graph whose agents hand off has another agent to hand to: a single agent
        # has none, and a delegate (pydantic-ai) is a tool call that comes back, not a
        # handoff.
        return "the agent hands off to no other agent"
    scripted = False
    for t, s, response in _tool_steps(data):
        for c, call in enumerate(response["tool_calls"]):
            askers = [tools for tools in graph.values() if call["name"] in tools]
            if not askers:
                continue
            scripted = True
            target = askers[0][call["name"]]
            # Another handoff every agent offering this one offers too: whichever asks, the
            # mutant is a handoff it could make, not a call it does not have.
            others = sorted(
                name
                for name, to in askers[0].items()
                if to != target and all(name in tools for tools in askers)
            )
            if others:
                mutated = copy.deepcopy(data)
                mutated["turns"][t]["steps"][s]["response"]["tool_calls"][c]["name"] = others[0]
                to = askers[0][others[0]]
                where = f"$.turns[{t}].steps[{s}].response.tool_calls[{c}].name"
                return f"{call['id']} hands off to {to}, not {target}", where, mutated, None
    if not scripted:
        return "no scripted handoff"
    return "no scripted handoff's agent hands off to any other agent"


# --- boundary mutants: faults of a broken loop, injected by the harness ---------------------


def _results_sent(data: dict[str, Any]) -> str | None:
    """Why no request of the case carries tool results to break; None: one does."""
    if not _tool_steps(data):
        return "no scripted tool call"
    turns = data["turns"]
    if not any(s + 1 < len(turns[t].get("steps") or []) for t, s, _ in _tool_steps(data)):
        return "no model request follows a tool step in its turn"
    return None


def _drop_call_ids(case: Case, data: dict[str, Any]) -> Made:
    why_not = _results_sent(data)
    if why_not is not None:
        return why_not

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = lambda request: replace(
            request,
            messages=tuple(
                replace(m, tool_call_id=None) if m.role == "tool" else m for m in request.messages
            ),
        )

    return (
        "tool results reach the model without their call ids",
        _first_tool_step(data),
        data,
        prepare,
    )


def _drop_tool_results(case: Case, data: dict[str, Any]) -> Made:
    why_not = _results_sent(data)
    if why_not is not None:
        return why_not

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = lambda request: replace(
            request, messages=tuple(m for m in request.messages if m.role != "tool")
        )

    return "tool results never reach the model", _first_tool_step(data), data, prepare


def _drop_history(case: Case, data: dict[str, Any]) -> Made:
    if len(data["turns"]) < 2:
        return "one turn only"
    inputs = [turn["user_input"] for turn in data["turns"]]

    def forget(request: ModelRequest) -> ModelRequest:
        messages = request.messages
        starts = [i for i, m in enumerate(messages) if m.role == "user" and m.content in inputs]
        if not starts:
            return request
        kept = [m for m in messages[: starts[-1]] if m.role == "system"]
        return replace(request, messages=(*kept, *messages[starts[-1] :]))

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = forget

    return "each turn's request loses the earlier turns", "$.turns[1]", data, prepare


def _undispatched(data: dict[str, Any], handoff_tools: set[str]) -> str | None:
    """Why no dispatch fault can reach the case's calls, or None when one can: a handoff
    is made by the framework, and a call rejected for approval never runs."""
    calls = [c for _, _, r in _tool_steps(data) for c in r["tool_calls"]]
    if not calls:
        return None
    if all(c["name"] in handoff_tools for c in calls):
        return "every scripted call is a handoff, which no dispatch makes"
    rejected = {
        key
        for turn in data["turns"]
        for key, decision in (turn.get("approvals") or {}).items()
        if not decision.get("approve")
    }
    if all(c["name"] in handoff_tools or c["id"] in rejected for c in calls):
        return "every scripted call is rejected for approval (or a handoff): none is dispatched"
    return None


def _dispatch_fault(
    description: str, data: dict[str, Any], fault: Callable[[Dispatch, str, Any], Any]
) -> Made:
    def prepare(context: AgentContext) -> None:
        context.tools.dispatch_fault = fault

    return description, _first_tool_step(data), data, prepare


def _first_tool_step(data: dict[str, Any]) -> str:
    steps = _tool_steps(data)
    return f"$.turns[{steps[0][0]}].steps[{steps[0][1]}]" if steps else "$.turns"


def _dispatch_twice(case: Case, data: dict[str, Any]) -> Made:
    if not _tool_steps(data):
        return "no scripted tool call"

    async def twice(dispatch: Dispatch, name: str, arguments: Any) -> ToolOutcome:
        await dispatch(name, arguments)
        return await dispatch(name, arguments)

    return _dispatch_fault("every call is dispatched twice", data, twice)


def _skip_call(case: Case, data: dict[str, Any]) -> Made:
    if not _tool_steps(data):
        return "no scripted tool call"
    skipped: list[bool] = []

    async def skip_first(dispatch: Dispatch, name: str, arguments: Any) -> ToolOutcome:
        if not skipped:
            skipped.append(True)
            return ToolOutcome("", True)  # never run, never recorded
        return await dispatch(name, arguments)

    return _dispatch_fault("the first call is never run", data, skip_first)


def _failure_as_success(case: Case, data: dict[str, Any]) -> Made:
    if not any(c["name"] == "fail" for _, _, r in _tool_steps(data) for c in r["tool_calls"]):
        return "no scripted call to a failing tool"

    async def lie(dispatch: Dispatch, name: str, arguments: Any) -> ToolOutcome:
        outcome = await dispatch(name, arguments)
        return outcome if outcome.success else ToolOutcome("ok", True)

    return _dispatch_fault("a failed call is told to the model as ok", data, lie)


def _reverse_parallel(case: Case, data: dict[str, Any]) -> Made:
    parallel = [(t, s, r) for t, s, r in _tool_steps(data) if len(r["tool_calls"]) >= 2]
    if not parallel:
        return "no step calls two tools at once"
    expects = data.get("expects") or {}
    pinned = {
        entry["tool"]
        for family in ("tool_arguments_contain", "tool_results_contain")
        for entry in expects.get(family) or []
        if entry.get("call_index") is not None
    }
    ordered = [
        (t, s)
        for t, s, r in parallel
        if any(sum(c["name"] == tool for c in r["tool_calls"]) >= 2 for tool in pinned)
    ]
    if not ordered:
        # Calls of one step may run concurrently: without a claimed order, reversing them
        # changes nothing a correct check may look at.
        return "no check claims an order between the calls of one step (call_index)"

    def reverse(step: ModelStep) -> ModelStep:
        return replace(step, tool_calls=tuple(reversed(step.tool_calls)))

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_step = reverse

    t, s = ordered[0]
    description = "the calls of one step are dispatched in reverse order"
    return description, f"$.turns[{t}].steps[{s}]", data, prepare


_SCRIPT: list[tuple[Family, str, Callable[[Case, dict[str, Any]], Made]]] = [
    ("script", "drop_tool_call", _drop_call),
    ("script", "change_argument", _change_argument),
    ("script", "swap_calls", _swap_calls),
    ("script", "change_final_text", _change_final_text),
    ("script", "drop_last_turn", _drop_last_turn),
]
_BOUNDARY: list[tuple[Family, str, Callable[[Case, dict[str, Any]], Made]]] = [
    ("boundary", "drop_tool_results", _drop_tool_results),
    ("boundary", "drop_call_ids", _drop_call_ids),
    ("boundary", "drop_history", _drop_history),
    ("boundary", "dispatch_twice", _dispatch_twice),
    ("boundary", "skip_call", _skip_call),
    ("boundary", "failure_as_success", _failure_as_success),
    ("boundary", "reverse_parallel", _reverse_parallel),
]
_JUDGE: list[tuple[Family, str, Callable[[Case, dict[str, Any]], Made]]] = [
    ("judge", "judge_wrong", _judge_wrong),
    ("judge", "judge_unhelpful", _judge_unhelpful),
    ("judge", "judge_off_task", _judge_off_task),
]
_TOOL_FAULTS = frozenset({"dispatch_twice", "skip_call", "failure_as_success"})
# The conformance rules that exist to catch each boundary fault: a case exempt from one
# cannot be expected to kill it.
_CAUGHT_BY: dict[str, tuple[str, ...]] = {
    "drop_tool_results": ("tool_results",),
    "drop_call_ids": ("tool_results",),
    "drop_history": ("history",),
    "dispatch_twice": ("dispatches",),
    "skip_call": ("dispatches",),
    "failure_as_success": ("tool_results",),
}
