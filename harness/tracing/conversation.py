"""The conversation every trace source produces and everything after it reads: what the
user said per turn, and each model answer in the order it happened (text or tool calls,
with ids, arguments, what each tool returned, the agent that asked, token usage), plus
what the trace proves about the run as a whole (handoffs, the final agent, guardrails that
tripped, whether it failed).

A source never writes a fixture and the writer never reads a trace: the sources differ in
what they read, and this is the one shape they agree on. `where` on each piece names the
trace and span it came from, so a later refusal can point at it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harness.errors import HarnessError

# What a call did in the run: a function (or MCP) tool the agent dispatched, a handoff to
# another agent, or another agent run as a tool.
CallKind = Literal["function", "handoff", "agent_tool"]


class TraceImportError(HarnessError):
    """A trace that cannot be read or turned into a case; the message names the file, the
    trace and the span. Nothing was written."""


@dataclass(frozen=True)
class ImportedCall:
    """One tool call of a model answer: `arguments` is the decoded JSON object the model
    sent; `result` what the tool returned as the trace kept it (None: the trace did not
    keep it); `target` the agent a handoff went to."""

    id: str
    name: str
    arguments: dict[str, Any]
    kind: CallKind = "function"
    result: str | None = None
    target: str | None = None
    failed: bool = False


@dataclass(frozen=True)
class ImportedStep:
    """One model answer: either `text` (a final answer) or `calls` (never both empty).
    `agent` is the agent whose request it answered, where the trace names one."""

    where: str
    agent: str | None = None
    text: str | None = None
    calls: tuple[ImportedCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ImportedTurn:
    """One user input and the model answers that followed it, in the order they happened."""

    user_input: str
    steps: tuple[ImportedStep, ...]
    where: str = ""


@dataclass(frozen=True)
class ImportedConversation:
    """One conversation of a trace, ready to become one fixture.

    `source` names the reader and the format version it read ("openai-agents-jsonl/1",
    "otlp-genai/1.37", "pydantic-ai-messages/1"); `trace_id` the trace (for an SDK
    conversation of several runs, the group id); `name` what a fixture id is derived from
    (the workflow or the first agent); `model_name` the model the trace names, if any.
    `instructions` per agent name, as the trace showed them (never written into a fixture:
    the importer may compare them with the agent's own)."""

    source: str
    trace_id: str
    name: str
    turns: tuple[ImportedTurn, ...]
    model_name: str | None = None
    agents: tuple[str, ...] = ()
    final_agent: str | None = None
    handoffs: tuple[tuple[str, str], ...] = ()
    guardrails_tripped: tuple[str, ...] = ()
    failed: bool = False
    instructions: dict[str, str] = field(default_factory=dict)
    # The agent each turn started at, where the trace says (a graph whose later turns start
    # at the agent that answered the one before needs `next_turn_agent: "last"`).
    starts: tuple[str | None, ...] = ()
    # The ids of the traces (runs) the conversation joins, each turn's in order, where a
    # source has several per conversation (`--trace` picks a conversation by any of them).
    runs: tuple[str, ...] = ()

    def calls(self) -> list[ImportedCall]:
        """Every tool call of the conversation, in order."""
        return [call for turn in self.turns for step in turn.steps for call in step.calls]

    def tools_used(self) -> list[str]:
        """The function tools the conversation dispatched, first use first, each once."""
        seen: dict[str, None] = {}
        for call in self.calls():
            if call.kind == "function":
                seen.setdefault(call.name, None)
        return list(seen)
