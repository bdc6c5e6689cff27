"""An OpenAI Agents SDK graph's guardrails: their names (what admission lets a fixture name),
and, on the per-case copy, each guardrail wrapped so every run of it is told to the model
boundary (its name, kind, agent, whether it tripped) while the SDK runs it as it always
does: the tripwire still raises, a tool guardrail's rejection still answers the call.

Only `harness.agents.frameworks.openai_agents` and `harness.agents.sdk_graph` import it:
it needs the SDK.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    InputGuardrail,
    InputGuardrailTripwireTriggered,
    OutputGuardrail,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)

from harness.model_boundary import GuardrailKind, ModelBoundary

# What the SDK raises when a guardrail's tripwire ends a run: the turn ends there, as the
# framework ends it, and the case goes on (a tripwire is a recorded event, not a run error).
TRIPWIRES: tuple[type[Exception], ...] = (
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)


def guardrail_names(graph: list[Agent[Any]]) -> dict[str, frozenset[str]]:
    """Each agent of the graph with guardrails and their names: its input and output
    guardrails and its function tools' input and output guardrails. The SDK runs an agent's
    input guardrails only for the agent a run starts at; they are named all the same (a
    case starting each turn at the last agent runs them)."""
    found: dict[str, frozenset[str]] = {}
    for agent in graph:
        names = {g.get_name() for g in agent.input_guardrails}
        names.update(g.get_name() for g in agent.output_guardrails)
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                names.update(g.get_name() for g in tool.tool_input_guardrails or ())
                names.update(g.get_name() for g in tool.tool_output_guardrails or ())
        if names:
            found[agent.name] = found.get(agent.name, frozenset()) | names
    return found


async def _outcome(function: Callable[..., Any], *arguments: Any) -> Any:
    output = function(*arguments)
    return await output if inspect.isawaitable(output) else output


def guard_agent(clone: Agent[Any], boundary: ModelBoundary) -> None:
    """`clone` (a per-case copy) with its input and output guardrails told to `boundary`."""
    name = clone.name
    clone.input_guardrails = [_guarded(g, "input", boundary, name) for g in clone.input_guardrails]
    clone.output_guardrails = [
        _guarded(g, "output", boundary, name) for g in clone.output_guardrails
    ]


def _guarded(
    guardrail: InputGuardrail[Any] | OutputGuardrail[Any],
    kind: GuardrailKind,
    boundary: ModelBoundary,
    agent: str,
) -> Any:
    function, name = guardrail.guardrail_function, guardrail.get_name()

    async def run(context: Any, target: Any, given: Any) -> Any:
        output = await _outcome(function, context, target, given)
        tripped = bool(getattr(output, "tripwire_triggered", False))
        boundary.guardrail(name, kind, agent=agent, tripped=tripped)
        return output

    # Named as it was: the SDK names a guardrail after its function when it has no name.
    return dataclasses.replace(guardrail, guardrail_function=run, name=name)


def guard_tool(tool: FunctionTool, boundary: ModelBoundary, agent: str) -> FunctionTool:
    """`tool` with its input and output guardrails told to `boundary`."""
    if not tool.tool_input_guardrails and not tool.tool_output_guardrails:
        return tool
    inputs = [
        _tool_guarded(g, "tool_input", boundary, agent, tool.name)
        for g in tool.tool_input_guardrails or ()
    ]
    outputs = [
        _tool_guarded(g, "tool_output", boundary, agent, tool.name)
        for g in tool.tool_output_guardrails or ()
    ]
    return dataclasses.replace(
        tool, tool_input_guardrails=inputs or None, tool_output_guardrails=outputs or None
    )


def _tool_guarded(
    guardrail: Any, kind: GuardrailKind, boundary: ModelBoundary, agent: str, tool: str
) -> Any:
    function, name = guardrail.guardrail_function, guardrail.get_name()

    async def run(data: Any) -> Any:
        output = await _outcome(function, data)
        behavior = getattr(output, "behavior", None)
        decided = behavior.get("type") if isinstance(behavior, dict) else None
        tripped = decided in ("reject_content", "raise_exception")
        message = behavior.get("message") if isinstance(behavior, dict) else None
        boundary.guardrail(
            name,
            kind,
            agent=agent,
            tripped=tripped,
            behavior=decided if tripped else None,
            tool=tool,
            call_id=getattr(data.context, "tool_call_id", None),
            message=message if isinstance(message, str) else None,
        )
        return output

    return dataclasses.replace(guardrail, guardrail_function=run, name=name)
