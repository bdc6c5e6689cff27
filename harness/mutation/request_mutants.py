"""The mutants of what an agent shows its model, which a case's request snapshot kills:
its instructions never reaching the model, a tool's JSON schema changed. Generated only
where the snapshot holds what they change; dropped instructions also where the agent
declares some, which the conformance rule `instructions` kills without a snapshot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from harness.agents.protocol import AgentContext
from harness.model_boundary import ModelRequest

# The mutated fixture, the field it concerns, its description and its boundary fault; or
# why it is not generated (as `mutants.Made`).
Made = tuple[str, str, dict[str, Any], Callable[[AgentContext], None] | None] | str

_NO_SNAPSHOT = "no request snapshot of the case for this agent (--update-snapshots takes it)"


def drop_instructions(snapshot: str | None, data: dict[str, Any], unruled: str | None) -> Made:
    """Killed by the snapshot, and by the conformance rule `instructions` where the agent
    declares instructions; `unruled`: why that rule cannot kill it (None: it can), which
    matters only where no snapshot was taken (`--snapshots off`)."""
    if snapshot is None and unruled is not None:
        return f"{_NO_SNAPSHOT}, and {unruled}"
    if snapshot is not None and "\n--- instructions\n" not in snapshot:
        return "the agent sends its model no instructions"

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = lambda request: replace(
            request, messages=tuple(m for m in request.messages if m.role != "system")
        )

    return "the instructions never reach the model", "$", data, prepare


def change_tool_schema(snapshot: str | None, data: dict[str, Any]) -> Made:
    if snapshot is None:
        return _NO_SNAPSHOT
    if "\n--- tool: " not in snapshot:
        return "the agent offers its model no tool"

    def changed(request: ModelRequest) -> ModelRequest:
        tools = sorted((t for t in request.tools if not t.output), key=lambda t: t.name)
        if not tools:
            return request
        first = tools[0]
        properties = dict(first.parameters.get("properties") or {})
        # One parameter gone, or one added where there is none: a schema the model was
        # never shown when the script was recorded.
        if properties:
            properties.pop(sorted(properties)[0])
        else:
            properties["mutant"] = {"type": "string"}
        schema = replace(first, parameters={**first.parameters, "properties": properties})
        return replace(request, tools=tuple(schema if t is first else t for t in request.tools))

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = changed

    return "the first tool's JSON schema loses a parameter", "$", data, prepare


def change_model_settings(snapshot: str | None, data: dict[str, Any]) -> Made:
    if snapshot is None:
        return _NO_SNAPSHOT
    if "\n--- model settings\n" not in snapshot:
        return "the agent sends its model no settings of its own"

    def changed(request: ModelRequest) -> ModelRequest:
        if not request.settings:
            return request
        # A temperature other than the agent's: sampled unlike the recorded script.
        other = 1.0 if request.settings.get("temperature") != 1.0 else 0.0
        return replace(request, settings={**request.settings, "temperature": other})

    def prepare(context: AgentContext) -> None:
        context.model.rewrite_request = changed

    return "the model settings' temperature changed", "$", data, prepare
