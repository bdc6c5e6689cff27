"""One OpenAI Agents SDK trace (a `Runner.run`) read into one turn of a conversation: its
spans put in the order they started, each model answer (generation or response span) a
step of the agent whose span holds it, with its calls' results from the function spans and
its handoffs from the handoff spans. Whatever cannot be read is a `TraceImportError` naming
the trace and the span.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

from harness.tracing.conversation import (
    ImportedCall,
    ImportedStep,
    ImportedTurn,
    TraceImportError,
)

MAX_SPANS = 10_000
# The SDK's span types: the ones not read here say nothing a replay needs.
KNOWN_TYPES = frozenset(
    {
        "agent",
        "generation",
        "response",
        "function",
        "handoff",
        "guardrail",
        "custom",
        "mcp_tools",
        "transcription",
        "speech",
        "speech_group",
        "task",
        "turn",
    }
)
_DEFAULT_WORKFLOW = "Agent workflow"
_EXPORT_ONLY = (
    "keeps only the response id (the SDK's own trace export drops a response's content): "
    "write the traces with harness.tracing.JsonlTraceProcessor"
)
_NOT_SENSITIVE = "(traced with trace_include_sensitive_data off? the import needs it on)"


class Span(NamedTuple):
    id: str
    parent: str | None
    started: datetime
    position: int
    type: str
    data: dict[str, Any]
    error: Any


@dataclass(frozen=True)
class TracePiece:
    """What one trace gives its conversation."""

    source: str
    trace_id: str
    group_id: str | None
    name: str
    started_at: datetime
    turn: ImportedTurn
    model: str | None = None
    agents: tuple[str, ...] = ()
    first_agent: str | None = None
    final_agent: str | None = None
    handoffs: tuple[tuple[str, str], ...] = ()
    guardrails_tripped: tuple[str, ...] = ()
    failed: bool = False
    instructions: dict[str, str] = field(default_factory=dict)


@dataclass
class _Call:
    call: ImportedCall
    agent: str | None
    matched: bool = False


@dataclass
class _Reading:
    at: str
    spans: dict[str, Span]
    steps: list[tuple[ImportedStep, list[_Call]]] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    handoffs: list[tuple[str, str]] = field(default_factory=list)
    tripped: list[str] = field(default_factory=list)
    instructions: dict[str, str] = field(default_factory=dict)
    failed: bool = False

    def agent_of(self, span: Span) -> str | None:
        parent = span.parent
        for _ in range(len(self.spans)):  # a cycle of parents ends here
            found = self.spans.get(parent) if parent is not None else None
            if found is None:
                return None
            if found.type == "agent":
                name = found.data.get("name")
                return name if isinstance(name, str) else None
            parent = found.parent
        raise TraceImportError(f"{self.at}: span {span.id}: its parents make a cycle")

    def pending(self) -> list[_Call]:
        return [c for _, calls in self.steps for c in calls if not c.matched]


def piece_of(record: dict[str, Any], source: str, where: str) -> TracePiece:
    """The turn of one trace record (`{"trace": {...}, "spans": [...]}`)."""
    trace = record.get("trace")
    if not isinstance(trace, dict) or not isinstance(trace.get("id"), str):
        raise TraceImportError(f'{where}: no "trace" with an "id"')
    trace_id: str = trace["id"]
    at = where if trace_id in where else f"{where}: trace {trace_id}"
    if record.get("incomplete"):
        raise TraceImportError(
            f"{at}: incomplete ({record['incomplete']}): its spans were not kept; "
            "it cannot be imported"
        )
    raw = record.get("spans")
    if not isinstance(raw, list):
        raise TraceImportError(f'{at}: "spans" is not a list')
    if len(raw) > MAX_SPANS:
        raise TraceImportError(f"{at}: more than {MAX_SPANS} spans")
    spans = [_span(item, index, at) for index, item in enumerate(raw)]
    spans.sort(key=lambda s: (s.started, s.position))  # the file's order may be any
    reading = _Reading(at, {s.id: s for s in spans})
    for span in spans:
        if span.parent is not None and span.parent not in reading.spans:
            raise TraceImportError(
                f"{at}: span {span.id}: its parent {span.parent} is not in the trace "
                "(a trace cut short?)"
            )
        _read_span(reading, span)
    if not reading.steps:
        if reading.tripped:
            raise TraceImportError(
                f"{at}: guardrail {reading.tripped[0]!r} stopped the run before any model "
                "call, so the trace keeps no user input: the turn cannot be reconstructed"
            )
        raise TraceImportError(f"{at}: no model answer (generation or response span) in it")
    group = trace.get("group_id")
    workflow = trace.get("workflow_name")
    first_model = next(s for s in spans if s.type in ("generation", "response"))
    steps = tuple(_finished(step, calls) for step, calls in reading.steps)
    final_agent = next((s.agent for s in reversed(steps) if s.agent), None)
    return TracePiece(
        source=source,
        trace_id=trace_id,
        group_id=group if isinstance(group, str) and group else None,
        name=(
            workflow
            if isinstance(workflow, str) and workflow and workflow != _DEFAULT_WORKFLOW
            else (reading.agents[0] if reading.agents else "trace")
        ),
        started_at=_started(trace, spans, at),
        turn=ImportedTurn(_user_input(first_model, at), steps, at),
        model=_text(first_model.data.get("model")),
        agents=tuple(dict.fromkeys(reading.agents)),
        first_agent=reading.agents[0] if reading.agents else None,
        final_agent=final_agent or (reading.agents[-1] if reading.agents else None),
        handoffs=tuple(reading.handoffs),
        guardrails_tripped=tuple(reading.tripped),
        failed=reading.failed or bool(reading.tripped),
        instructions=reading.instructions,
    )


def _span(item: Any, index: int, at: str) -> Span:
    if not isinstance(item, dict):
        raise TraceImportError(f"{at}: spans[{index}] is not an object")
    span_id = item.get("id")
    if not isinstance(span_id, str) or not span_id:
        raise TraceImportError(f"{at}: spans[{index}] has no id")
    data = item.get("span_data")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TraceImportError(f"{at}: span {span_id}: no span_data with a type")
    kind: str = data["type"]
    if kind not in KNOWN_TYPES:
        raise TraceImportError(
            f"{at}: span {span_id}: unknown span type {kind!r} (this version reads "
            f"{', '.join(sorted(KNOWN_TYPES))})"
        )
    started = item.get("started_at")
    try:
        when = datetime.fromisoformat(started) if isinstance(started, str) else None
    except ValueError:
        when = None
    if when is None:
        raise TraceImportError(f"{at}: span {span_id}: started_at {started!r} is no ISO time")
    parent = item.get("parent_id")
    return Span(
        span_id,
        parent if isinstance(parent, str) else None,
        when,
        index,
        kind,
        data,
        item.get("error"),
    )


def _started(trace: dict[str, Any], spans: list[Span], at: str) -> datetime:
    given = trace.get("started_at")
    if isinstance(given, str):
        try:
            return datetime.fromisoformat(given)
        except ValueError:
            raise TraceImportError(f"{at}: started_at {given!r} is no ISO time") from None
    return spans[0].started if spans else datetime.min


def _read_span(reading: _Reading, span: Span) -> None:
    data = span.data
    if span.type in ("generation", "response"):
        agent = reading.agent_of(span)
        step, calls = _model_step(span, agent, reading.at)
        reading.steps.append((step, calls))
        _instructions(reading, span, agent)
        reading.failed |= span.error is not None
    elif span.type == "function":
        _function(reading, span)
    elif span.type == "handoff":
        _handoff(reading, span)
    elif span.type == "guardrail":
        if data.get("triggered") is True and isinstance(data.get("name"), str):
            reading.tripped.append(data["name"])
    elif span.type == "agent":
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise TraceImportError(f"{reading.at}: span {span.id}: an agent span without a name")
        reading.agents.append(name)
        reading.failed |= span.error is not None


def _function(reading: _Reading, span: Span) -> None:
    name = span.data.get("name")
    agent = reading.agent_of(span)
    for pending in reading.pending():
        if pending.call.name == name and pending.agent == agent:
            pending.matched = True
            output = span.data.get("output")
            nested = any(s.parent == span.id and s.type == "agent" for s in reading.spans.values())
            pending.call = replace(
                pending.call,
                result=None if output is None else str(output),
                failed=span.error is not None,
                kind="agent_tool" if nested else "function",
            )
            return
    raise TraceImportError(
        f"{reading.at}: span {span.id}: a call of tool {name!r} that no earlier model answer "
        f"of {agent!r} asked for (spans out of order?)"
    )


def _handoff(reading: _Reading, span: Span) -> None:
    source, target = span.data.get("from_agent"), span.data.get("to_agent")
    if not isinstance(source, str) or not isinstance(target, str):
        raise TraceImportError(f"{reading.at}: span {span.id}: a handoff without from/to agents")
    for pending in reading.pending():
        if pending.agent == source:
            pending.matched = True
            pending.call = replace(pending.call, kind="handoff", target=target)
            reading.handoffs.append((source, target))
            return
    raise TraceImportError(
        f"{reading.at}: span {span.id}: a handoff from {source!r} that no model answer of "
        "it asked for (spans out of order?)"
    )


def _finished(step: ImportedStep, calls: list[_Call]) -> ImportedStep:
    return replace(step, calls=tuple(c.call for c in calls))


def _model_step(span: Span, agent: str | None, at: str) -> tuple[ImportedStep, list[_Call]]:
    where = f"{at}: span {span.id}"
    output = span.data.get("output")
    if not isinstance(output, list):
        why = _EXPORT_ONLY if span.type == "response" else f"keeps no model output {_NOT_SENSITIVE}"
        raise TraceImportError(f"{where}: a {span.type} span that {why}")
    texts: list[str] = []
    calls: list[ImportedCall] = []
    for index, item in enumerate(output):
        if not isinstance(item, dict):
            raise TraceImportError(f"{where}: output[{index}] is not an object")
        if span.type == "generation":
            _message(item, where, texts, calls)
        else:
            _response_item(item, f"{where}: output[{index}]", texts, calls)
    tokens = _usage(span.data.get("usage"), where)
    text = None if calls else "".join(texts)
    step = ImportedStep(where, agent, text, tuple(calls), *tokens)
    return step, [_Call(call, agent) for call in calls]


def _message(item: dict[str, Any], where: str, texts: list[str], calls: list[ImportedCall]) -> None:
    content = item.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts.extend(p["text"] for p in content if isinstance(p, dict) and _text(p.get("text")))
    elif content is None and isinstance(item.get("refusal"), str):
        texts.append(item["refusal"])
    for call in item.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise TraceImportError(f"{where}: a tool call without its function")
        calls.append(_call(call.get("id"), function.get("name"), function.get("arguments"), where))


def _response_item(
    item: dict[str, Any], where: str, texts: list[str], calls: list[ImportedCall]
) -> None:
    kind = item.get("type")
    if kind == "message":
        for part in item.get("content") or ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
                texts.append(part["refusal"])
    elif kind == "function_call":
        calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments"), where))
    elif kind != "reasoning":  # reasoning is the model's own; a replay scripts the answer
        raise TraceImportError(
            f"{where}: output item of type {kind!r}: a hosted tool's call cannot be replayed"
        )


def _call(call_id: Any, name: Any, arguments: Any, where: str) -> ImportedCall:
    if not isinstance(call_id, str) or not isinstance(name, str) or not name:
        raise TraceImportError(f"{where}: a tool call without its id or name")
    if arguments in (None, ""):
        decoded: Any = {}
    else:
        try:
            decoded = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            decoded = None
    if not isinstance(decoded, dict):
        raise TraceImportError(
            f"{where}: call {call_id} of {name!r}: its arguments are no JSON object"
        )
    return ImportedCall(call_id, name, decoded)


def _usage(usage: Any, where: str) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    if not isinstance(usage, dict):
        raise TraceImportError(f"{where}: usage is not an object")
    counts = []
    for names in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        value = next((usage[n] for n in names if usage.get(n) is not None), 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TraceImportError(f"{where}: usage {names[0]} {value!r} is no token count")
        counts.append(value)
    return counts[0], counts[1]


def _user_input(span: Span, at: str) -> str:
    where = f"{at}: span {span.id}"
    given = span.data.get("input")
    if isinstance(given, str):
        return given
    if not isinstance(given, list):
        raise TraceImportError(f"{where}: keeps no model input {_NOT_SENSITIVE}")
    for item in reversed(given):
        if isinstance(item, dict) and item.get("role") == "user":
            text = _content_text(item.get("content"))
            if text is not None:
                return text
    raise TraceImportError(f"{where}: no user message in the model's input")


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def _instructions(reading: _Reading, span: Span, agent: str | None) -> None:
    given = span.data.get("input")
    if agent is None or agent in reading.instructions or not isinstance(given, list):
        return
    first = given[0] if given else None
    if isinstance(first, dict) and first.get("role") in ("system", "developer"):
        text = _content_text(first.get("content"))
        if text is not None:
            reading.instructions[agent] = text


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
