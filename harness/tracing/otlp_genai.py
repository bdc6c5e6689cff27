"""OpenTelemetry GenAI spans in OTLP JSON as a trace source: the OpenTelemetry Collector
file exporter's format, one `{"resourceSpans": [...]}` document a line, ids in hex,
attributes as `{"key": ..., "value": {"stringValue" | "intValue" | ...}}`.

Two spellings of the GenAI semantic conventions are read, per span:

* current (semconv 1.37 on; pydantic-ai's instrumentation versions 2 to 6): a model call's
  messages as the JSON attributes `gen_ai.input.messages`, `gen_ai.output.messages` and
  `gen_ai.system_instructions` (parts `text`, `tool_call`, `tool_call_response`,
  `thinking`);
* the older events (semconv 1.27 to 1.36; pydantic-ai's version 1 and instrumentations of
  that time): span events `gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice`, or the same events
  as a JSON array in the span's `events` attribute (each naming itself in `event.name`).

Spans are grouped by trace, and traces into one conversation by `gen_ai.conversation.id`
where a span carries one. Within it, spans are ordered by start time, never by the order
the file holds them. Each top-level agent run (`gen_ai.operation.name` `invoke_agent`) is
one turn, whose user input is the user text its first model call was sent; without agent
spans a model call sent new user text starts a turn. Every `chat` span is one model answer;
`execute_tool` spans give each call's result (`gen_ai.tool.call.result`, or pydantic-ai's
older `tool_response`) and whether it failed. What cannot be replayed (media, several
choices, content the instrumentation left out, an unknown operation) is refused, naming
the trace, the span and the attribute.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from harness.io.files import decode_json
from harness.tracing.conversation import (
    ImportedCall,
    ImportedConversation,
    ImportedStep,
    ImportedTurn,
    TraceImportError,
)
from harness.tracing.otlp_json import SpanRecord, read_spans

# The name `--format` knows it by; the conversations it reads say the spelling they were
# read in, `VERSION` or `EVENTS_VERSION`.
FORMAT = "otlp-genai"
VERSION = "otlp-genai/1.37"
EVENTS_VERSION = "otlp-genai/events-1.27"

_MODEL_CALLS = frozenset({"chat", "text_completion", "generate_content"})
# Operations that are no part of a conversation a replay scripts: read past.
_PASSED = frozenset({"create_agent", "embeddings"})
_OPERATIONS = _MODEL_CALLS | _PASSED | {"execute_tool", "invoke_agent"}
_LEGACY_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def sniff(head: bytes) -> bool:
    """Whether a file's first bytes look like OTLP JSON traces."""
    return head.lstrip()[:1] == b"{" and b'"resourceSpans"' in head


def read(path: Path, *, limit_bytes: int) -> Iterator[ImportedConversation]:
    """The conversations of one OTLP JSON file, first started first."""
    groups: dict[str, list[dict[str, SpanRecord]]] = {}
    for trace_id, spans in read_spans(path, limit_bytes=limit_bytes).items():
        # The first span's: an agent a tool runs may start a conversation of its own, but
        # it is part of the run it was called from, which started before it.
        first = sorted(spans.values(), key=lambda s: (s.start, s.span_id))
        ids = (s.attributes.get("gen_ai.conversation.id") for s in first)
        key = next((i for i in ids if isinstance(i, str) and i), trace_id)
        groups.setdefault(key, []).append(spans)
    ordered = sorted(groups.items(), key=lambda g: min(s.start for t in g[1] for s in t.values()))
    for key, group in ordered:
        try:
            conversation = _Conversation(key).build(group)
        except RecursionError:  # a structured attribute nested deeper than can be written
            raise TraceImportError(
                f"{path}: conversation {key}: a value nested too deeply to be read"
            ) from None
        if conversation is not None:
            yield conversation


def _json_attribute(span: SpanRecord, name: str) -> Any:
    """A span attribute the conventions define as JSON: a string to decode, or already
    structured (an OTLP array or key-value list)."""
    value = span.attributes.get(name)
    if isinstance(value, str):
        try:
            return decode_json(value)
        except msgspec.DecodeError:
            raise TraceImportError(f"{span.where}: {name} is not JSON") from None
    return value


def _text_of(parts: Any, span: SpanRecord, attribute: str) -> str:
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise TraceImportError(f"{span.where}: {attribute} is neither text nor a list of parts")
    texts = []
    for i, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") == "text":
            texts.append(_content(part, span, f"{attribute}[{i}]"))
    return "\n".join(texts)


def _content(part: dict[str, Any], span: SpanRecord, at: str) -> str:
    content = part.get("content")
    if not isinstance(content, str):
        raise TraceImportError(
            f"{span.where}: {at} has no text content (was the instrumentation set to leave "
            "content out?)"
        )
    return content


def _arguments(raw: Any, span: SpanRecord, at: str) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = decode_json(raw)
        except msgspec.DecodeError:
            raise TraceImportError(f"{span.where}: {at}.arguments is not JSON") from None
    if not isinstance(raw, dict):
        raise TraceImportError(f"{span.where}: {at}.arguments is not a JSON object")
    return raw


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


# The older events, in the current message shape: a role and its parts.
def _legacy_messages(span: SpanRecord) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events = list(span.events)
    listed = _json_attribute(span, "events")
    if listed is not None:
        if not isinstance(listed, list) or not all(isinstance(e, dict) for e in listed):
            raise TraceImportError(f"{span.where}: events is not a JSON array of events")
        events += [(str(e.get("event.name", "")), e) for e in listed]
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, body in events:
        if name == "gen_ai.choice":
            message = _maybe_json(body.get("message", body))
            if not isinstance(message, dict):
                raise TraceImportError(f"{span.where}: event gen_ai.choice has no message")
            outputs.append(_legacy_message("assistant", message, span, name))
        elif name in _LEGACY_EVENTS:
            inputs.append(_legacy_message(_LEGACY_EVENTS[name], body, span, name))
    return inputs, outputs


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return decode_json(value)
        except msgspec.DecodeError:
            return value
    return value


def _legacy_message(
    role: str, body: dict[str, Any], span: SpanRecord, event: str
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    content = _maybe_json(body.get("content"))
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": body.get("id"), "result": content})
    elif isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif content not in (None, "", []):
        raise TraceImportError(f"{span.where}: event {event}: content other than text")
    calls = _maybe_json(body.get("tool_calls")) or []
    if not isinstance(calls, list):
        raise TraceImportError(f"{span.where}: event {event}: tool_calls is not a list")
    for call in calls:
        function = _maybe_json(call.get("function")) if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise TraceImportError(f"{span.where}: event {event}: a tool call without function")
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return {"role": role, "parts": parts}


@dataclass
class _ModelCall:
    span: SpanRecord
    inputs: list[dict[str, Any]]
    output: dict[str, Any]
    legacy: bool
    instructions: str | None


def _model_call(span: SpanRecord) -> _ModelCall:
    if "gen_ai.input.messages" in span.attributes or "gen_ai.output.messages" in span.attributes:
        inputs = _json_attribute(span, "gen_ai.input.messages") or []
        outputs = _json_attribute(span, "gen_ai.output.messages") or []
        legacy = False
        system = _json_attribute(span, "gen_ai.system_instructions")
        instructions = None if system is None else _text_of(system, span, "system_instructions")
    else:
        inputs, outputs = _legacy_messages(span)
        legacy = True
        system_texts = [
            _text_of(m["parts"], span, "gen_ai.system.message")
            for m in inputs
            if m["role"] == "system"
        ]
        instructions = "\n".join(system_texts) if system_texts else None
    for name, value in (("gen_ai.input.messages", inputs), ("gen_ai.output.messages", outputs)):
        if not isinstance(value, list) or not all(
            isinstance(m, dict) and isinstance(m.get("parts"), list) for m in value
        ):
            raise TraceImportError(f"{span.where}: {name} is not a list of messages with parts")
    if not outputs:
        raise TraceImportError(
            f"{span.where}: a model call without its answer: no gen_ai.output.messages, no "
            "gen_ai.choice event (was the instrumentation set to leave content out?)"
        )
    if len(outputs) > 1:
        raise TraceImportError(
            f"{span.where}: gen_ai.output.messages holds {len(outputs)} choices; a replay "
            "scripts one answer a call"
        )
    return _ModelCall(span, inputs, outputs[0], legacy, instructions)


def _answered(span: SpanRecord) -> bool:
    """Whether a model call span holds an answer, in either spelling."""
    return (
        "gen_ai.output.messages" in span.attributes
        or "events" in span.attributes
        or any(name == "gen_ai.choice" for name, _ in span.events)
    )


def _new_user_text(inputs: list[dict[str, Any]], span: SpanRecord) -> str | None:
    """The user text sent after the last assistant message, if any."""
    texts: list[str] = []
    for message in reversed(inputs):
        if message.get("role") == "assistant":
            break
        if message.get("role") == "user":
            texts[:0] = [
                _content(part, span, "gen_ai.input.messages")
                for part in message["parts"]
                if isinstance(part, dict) and part.get("type") == "text"
            ]
    return "\n".join(texts) if texts else None


@dataclass
class _Conversation:
    key: str
    results: dict[str, tuple[str, bool]] = field(default_factory=dict)
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    failed: bool = False

    def build(self, traces: list[dict[str, SpanRecord]]) -> ImportedConversation | None:
        for trace in traces:
            self.spans.update(trace)
        ordered = sorted(self.spans.values(), key=lambda s: (s.start, s.span_id))
        calls: list[_ModelCall] = []
        unanswered: SpanRecord | None = None
        for span in ordered:
            operation = span.operation
            if operation is None or operation in _PASSED:
                continue
            if operation not in _OPERATIONS:
                raise TraceImportError(
                    f"{span.where}: gen_ai.operation.name {operation!r} is not read "
                    f"(read: {', '.join(sorted(_OPERATIONS))})"
                )
            if operation == "execute_tool":
                self._tool_result(span)
            elif operation in _MODEL_CALLS and span.error and not _answered(span):
                # A model call that failed (the provider's error): no answer to script;
                # the run it ended failed, and what came before it is still the case.
                self.failed = True
                unanswered = unanswered or span
            elif operation in _MODEL_CALLS:
                calls.append(_model_call(span))
        if not calls and unanswered is not None:
            raise TraceImportError(
                f"{unanswered.where}: the conversation's first model call failed, and no "
                "model answer is left to script"
            )
        if not calls:
            return None  # a trace of other work: no model call in it
        for call in calls:  # a result no tool span kept, from the request that sent it back
            self._sent_results(call.inputs)
        return self._conversation(calls)

    def _sent_results(self, inputs: list[dict[str, Any]]) -> None:
        for message in inputs:
            for part in message["parts"]:
                if isinstance(part, dict) and part.get("type") == "tool_call_response":
                    sent = (_result_text(part.get("result")), False)
                    self.results.setdefault(str(part.get("id")), sent)

    def _tool_result(self, span: SpanRecord) -> None:
        call_id = span.attributes.get("gen_ai.tool.call.id")
        if not isinstance(call_id, str):
            return
        result = span.attributes.get(
            "gen_ai.tool.call.result", span.attributes.get("tool_response")
        )
        failed = span.error or "pydantic_ai.tool.retry.cause" in span.attributes
        if result is not None or failed:
            self.results[call_id] = ("" if result is None else _result_text(result), failed)

    def _turn_of(self, span: SpanRecord) -> str | None:
        """The outermost agent run the span is part of."""
        outermost = None
        seen: set[str] = set()
        current: SpanRecord | None = span
        while current is not None and current.span_id not in seen:
            seen.add(current.span_id)
            if current.operation == "invoke_agent":
                outermost = current.span_id
            current = self.spans.get(current.parent)
        return outermost

    def _agent_of(self, span: SpanRecord) -> str | None:
        current: SpanRecord | None = span
        seen: set[str] = set()
        while current is not None and current.span_id not in seen:
            seen.add(current.span_id)
            name = current.attributes.get("gen_ai.agent.name")
            if isinstance(name, str) and name:
                return name
            current = self.spans.get(current.parent)
        return None

    def _step(self, call: _ModelCall) -> ImportedStep:
        span = call.span
        texts: list[str] = []
        calls: list[ImportedCall] = []
        for i, part in enumerate(call.output["parts"]):
            at = f"gen_ai.output.messages[0].parts[{i}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(_content(part, span, at))
            elif kind == "tool_call":
                call_id, name = part.get("id"), part.get("name")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    raise TraceImportError(f"{span.where}: {at}: a tool call without id or name")
                result = self.results.get(call_id)
                calls.append(
                    ImportedCall(
                        id=call_id,
                        name=name,
                        arguments=_arguments(part.get("arguments"), span, at),
                        result=None if result is None else result[0],
                        failed=False if result is None else result[1],
                    )
                )
            elif kind != "thinking":
                raise TraceImportError(f"{span.where}: {at}: part type {kind!r} cannot be replayed")
        if not texts and not calls:
            raise TraceImportError(f"{span.where}: gen_ai.output.messages: an empty answer")
        return ImportedStep(
            where=span.where,
            agent=self._agent_of(span),
            text="".join(texts) if not calls else None,
            calls=tuple(calls),
            input_tokens=_tokens(span, "gen_ai.usage.input_tokens"),
            output_tokens=_tokens(span, "gen_ai.usage.output_tokens"),
        )

    def _conversation(self, calls: list[_ModelCall]) -> ImportedConversation:
        turns: list[ImportedTurn] = []
        current: list[ImportedStep] = []
        opened: tuple[str, str] | None = None  # the turn's user input and where it was sent
        last_key: str | None = None
        instructions: dict[str, str] = {}
        for index, call in enumerate(calls):
            key = self._turn_of(call.span)
            user_text = _new_user_text(call.inputs, call.span)
            starts = index == 0 or (key != last_key if key is not None else user_text is not None)
            if starts:
                if user_text is None:
                    raise TraceImportError(
                        f"{call.span.where}: a turn's first model call was sent no user text "
                        "in gen_ai.input.messages (a truncated trace?)"
                    )
                if opened is not None:
                    turns.append(ImportedTurn(opened[0], tuple(current), opened[1]))
                opened, current = (user_text, call.span.where), []
            last_key = key
            step = self._step(call)
            current.append(step)
            if call.instructions is not None:
                instructions.setdefault(step.agent or "", call.instructions)
        assert opened is not None
        turns.append(ImportedTurn(opened[0], tuple(current), opened[1]))
        steps = [step for turn in turns for step in turn.steps]
        agents = tuple(dict.fromkeys(s.agent for s in steps if s.agent is not None))
        first = calls[0].span.attributes
        model = first.get("gen_ai.request.model") or first.get("gen_ai.response.model")
        return ImportedConversation(
            source=EVENTS_VERSION if any(c.legacy for c in calls) else VERSION,
            trace_id=self.key,
            name=agents[0] if agents else f"otlp-{self.key[:8]}",
            turns=tuple(turns),
            model_name=model if isinstance(model, str) else None,
            agents=agents,
            final_agent=steps[-1].agent,
            failed=self.failed
            or any(s.error and s.operation == "invoke_agent" for s in self.spans.values()),
            instructions=instructions,
        )


def _tokens(span: SpanRecord, name: str) -> int:
    value = span.attributes.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceImportError(f"{span.where}: {name} is not a token count: {value!r}")
    return value
