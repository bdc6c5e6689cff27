"""An imported conversation as a replay fixture: each turn's user input and the model
answers that followed it as its scripted steps (text, or tool calls with their ids and
arguments, a handoff's call among them, as the model made it), each naming its agent where
the conversation had more than one, with token counts; `origin` naming the trace; `id` and
`model_name` derived from the trace unless given. The writer never reads a trace and never
decides what the case asserts: its `expects` are the families the user chose.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.live.recorder import unique_id
from harness.tracing.conversation import ImportedConversation, ImportedStep

_SLUG = re.compile(r"[^a-z0-9]+")
MAX_ID = 60


def slug(text: str) -> str:
    """`text` as a case id or file name: lower-case letters, digits and dashes."""
    return _SLUG.sub("-", text.lower()).strip("-")[:MAX_ID].strip("-") or "imported"


def derived_id(conversation: ImportedConversation) -> str:
    """The case id of a conversation: its name and its group id, or the start of its
    trace id."""
    tail = slug(conversation.trace_id)
    if tail.startswith("trace-"):
        tail = tail.removeprefix("trace-")[:8]
    name = slug(conversation.name)
    return f"{name}-{tail}" if tail and tail != name else name


def fixture_of(
    conversation: ImportedConversation,
    *,
    case_id: str,
    model_name: str | None = None,
    expects: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fixture document of `conversation`."""
    several = len(conversation.agents) > 1
    used: set[str] = set()
    turns = [
        {
            "user_input": turn.user_input,
            "steps": [_step(step, several, used) for step in turn.steps],
        }
        for turn in conversation.turns
    ]
    fixture: dict[str, Any] = {
        "id": case_id,
        "model_name": model_name or conversation.model_name or case_id,
        "description": (
            f"Imported from {conversation.source} trace {conversation.trace_id} "
            f"({len(turns)} turn(s)). Its expectations say what the trace did: review them."
        ),
        "turns": turns,
    }
    if _continues_at_last(conversation):
        fixture["next_turn_agent"] = "last"
    if expects:
        fixture["expects"] = expects
    fixture["origin"] = {"source": conversation.source, "trace_id": conversation.trace_id}
    return fixture


def text_of(fixture: dict[str, Any]) -> str:
    return json.dumps(fixture, indent=2, ensure_ascii=False) + "\n"


def _continues_at_last(conversation: ImportedConversation) -> bool:
    """Whether a later turn started where the one before ended rather than at the first
    agent (the application passed the SDK's `last_agent` on)."""
    starts = conversation.starts
    if len(starts) < 2 or starts[0] is None:
        return False
    return any(start is not None and start != starts[0] for start in starts[1:])


def _step(step: ImportedStep, several: bool, used: set[str]) -> dict[str, Any]:
    tokens = {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}
    if step.calls:
        calls = [
            {"id": unique_id(call.id, used), "name": call.name, "arguments": call.arguments}
            for call in step.calls
        ]
        response: dict[str, Any] = {"type": "tool_calls", "tool_calls": calls, **tokens}
    else:
        response = {"type": "text", "content": step.text or "", **tokens}
    if several and step.agent:
        return {"agent": step.agent, "response": response}
    return {"response": response}
