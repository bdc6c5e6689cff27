"""pydantic-ai's message history as a trace source: what `result.all_messages_json()` writes
(a JSON array of `ModelRequest` / `ModelResponse` objects, told apart by `kind`, their
parts by `part_kind`), one conversation a file, or JSON lines of such arrays, one
conversation a line, as users log them per run.

Read without pydantic-ai: the documented JSON shape, decoded by msgspec with every field
read type-checked. Keys this reader does not use are let through, since each pydantic-ai
release adds some (`run_id`, `state`, …); a part kind it cannot replay is refused, naming
its JSON path (`$[3].parts[1]`). A user prompt starts a turn; every response is one model
answer; a tool's return (or its `retried` / `retry-prompt` answer) is the result of the
call with its id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from harness.io.files import InputError, decode_json, read_bounded
from harness.tracing.conversation import (
    ImportedCall,
    ImportedConversation,
    ImportedStep,
    ImportedTurn,
    TraceImportError,
)

# The name `--format` knows it by; the conversations it reads say `VERSION`.
FORMAT = "pydantic-ai-messages"
VERSION = "pydantic-ai-messages/1"
LOG = logging.getLogger("harness.tracing")

# Request parts that say nothing a replay scripts: the agent's own prompts and the
# framework's bookkeeping, which the replayed agent makes again itself.
_IGNORED_REQUEST_PARTS = frozenset(
    {
        "system-prompt",
        "instruction",
        "instruction-delta",
        "instruction-digest",
        "instruction-baseline",
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
        # An output retry: the replayed agent's validator sends it again.
        "retry-feedback",
    }
)
# Response parts a replay script cannot hold, and why.
_UNREPLAYABLE_RESPONSE_PARTS = {
    "builtin-tool-call": "a provider's built-in tool call (run by the provider, not the agent)",
    "builtin-tool-return": "a provider's built-in tool result",
    "file": "a file the model generated",
    "speech": "speech the model generated",
    "compaction": "a provider's compaction of the history",
}
# How a tool return says the tool did not succeed.
_FAILED_OUTCOMES = frozenset({"failed", "denied", "interrupted", "retried"})


class _Message(msgspec.Struct):
    kind: Literal["request", "response"]
    parts: list[msgspec.Raw]
    conversation_id: str | None = None
    run_id: str | None = None
    model_name: str | None = None
    usage: dict[str, Any] | None = None


class _Kind(msgspec.Struct):
    part_kind: str


class _UserPrompt(msgspec.Struct):
    content: str | list[Any]


class _ToolReturn(msgspec.Struct):
    tool_call_id: str
    content: Any = None
    outcome: str = "success"


class _RetryPrompt(msgspec.Struct):
    content: Any
    tool_call_id: str | None = None
    tool_name: str | None = None


class _Text(msgspec.Struct):
    content: str


class _ToolCall(msgspec.Struct):
    tool_name: str
    tool_call_id: str
    args: str | dict[str, Any] | None = None


def read(path: Path, *, limit_bytes: int) -> Iterator[ImportedConversation]:
    """The conversations of one logged history file: the whole file one history, or one
    history a line."""
    try:
        data = read_bounded(path, limit_bytes)
    except InputError as exc:
        raise TraceImportError(f"{path}: {exc.reason}") from None
    try:
        whole = decode_json(data, list[msgspec.Raw])
    except msgspec.DecodeError:
        whole = None
    if whole is not None:
        yield _guarded(whole, f"{path}", trace_id=path.stem)
        return
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            history = decode_json(line, list[msgspec.Raw])
        except msgspec.DecodeError as exc:
            if number == len(lines) and "truncated" in str(exc):  # a writer stopped mid-line
                LOG.warning("%s: a truncated last line, passed over", where)
                return
            raise TraceImportError(f"{where}: not a JSON array of messages: {exc}") from None
        yield _guarded(history, where, trace_id=f"{path.stem}:{number}")


def _guarded(history: list[msgspec.Raw], where: str, trace_id: str) -> ImportedConversation:
    try:
        return _conversation(history, where, trace_id)
    except RecursionError:  # a tool's result nested deeper than it can be written back
        raise TraceImportError(f"{where}: a value nested too deeply to be read") from None


def sniff(head: bytes) -> bool:
    """Whether a file's first bytes look like logged pydantic-ai messages: a JSON array
    whose parts say their `part_kind`."""
    return head.lstrip()[:1] == b"[" and b'"part_kind"' in head


def _decode(raw: msgspec.Raw, type: Any, where: str) -> Any:
    try:
        return decode_json(raw, type)
    except msgspec.DecodeError as exc:
        # msgspec's path starts at `$`, the decoded piece's: made the history's own.
        json_path = where.rpartition(": ")[2]
        raise TraceImportError(f"{where}: {str(exc).replace('`$', '`' + json_path)}") from None


def _result_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


class _Builder:
    """One history read in order: turns opened by user prompts, a step per response."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.turns: list[tuple[str, str, list[tuple[str, _Message]]]] = []
        self.results: dict[str, tuple[str, bool]] = {}
        self.model_name: str | None = None
        self.conversation_id: str | None = None

    def request(self, message: _Message, at: str) -> None:
        prompts: list[str] = []
        for j, raw in enumerate(message.parts):
            where = f"{at}.parts[{j}]"
            kind = _decode(raw, _Kind, where).part_kind
            if kind == "user-prompt":
                prompts.append(self._prompt(_decode(raw, _UserPrompt, where), where))
            elif kind == "tool-return":
                part = _decode(raw, _ToolReturn, where)
                failed = part.outcome in _FAILED_OUTCOMES
                self.results[part.tool_call_id] = (_result_text(part.content), failed)
            elif kind == "retry-prompt":
                retry = _decode(raw, _RetryPrompt, where)
                if retry.tool_name is not None and retry.tool_call_id is not None:
                    self.results[retry.tool_call_id] = (_result_text(retry.content), True)
            elif kind not in _IGNORED_REQUEST_PARTS:
                raise TraceImportError(f"{where}: unknown request part_kind {kind!r}")
        if prompts:
            self.turns.append(("\n".join(prompts), at, []))

    def _prompt(self, part: _UserPrompt, where: str) -> str:
        if isinstance(part.content, str):
            return part.content
        texts = [item for item in part.content if isinstance(item, str)]
        if len(texts) != len(part.content):
            raise TraceImportError(
                f"{where}.content: a user prompt with images, audio or files cannot be replayed"
            )
        return "\n".join(texts)

    def response(self, message: _Message, at: str) -> None:
        if not self.turns:
            raise TraceImportError(f"{at}: a model response before any user prompt")
        if message.model_name is not None and self.model_name is None:
            self.model_name = message.model_name
        self.turns[-1][2].append((at, message))

    def step(self, at: str, message: _Message) -> ImportedStep:
        texts: list[str] = []
        calls: list[ImportedCall] = []
        for j, raw in enumerate(message.parts):
            where = f"{at}.parts[{j}]"
            kind = _decode(raw, _Kind, where).part_kind
            if kind == "text":
                texts.append(_decode(raw, _Text, where).content)
            elif kind == "tool-call":
                calls.append(self._call(_decode(raw, _ToolCall, where), where))
            elif kind in _UNREPLAYABLE_RESPONSE_PARTS:
                what = _UNREPLAYABLE_RESPONSE_PARTS[kind]
                raise TraceImportError(f"{where}: {kind!r} is {what}, which cannot be replayed")
            elif kind != "thinking":
                raise TraceImportError(f"{where}: unknown response part_kind {kind!r}")
        if not texts and not calls:
            raise TraceImportError(f"{at}: a model response with neither text nor tool calls")
        usage = message.usage or {}
        return ImportedStep(
            where=at,
            text="".join(texts) if not calls else None,
            calls=tuple(calls),
            input_tokens=_count(usage, "input_tokens", "request_tokens", at),
            output_tokens=_count(usage, "output_tokens", "response_tokens", at),
        )

    def _call(self, part: _ToolCall, where: str) -> ImportedCall:
        if part.args is None or isinstance(part.args, dict):
            arguments = part.args or {}
        else:
            try:
                arguments = decode_json(part.args) if part.args.strip() else {}
            except msgspec.DecodeError:
                raise TraceImportError(f"{where}.args: not JSON: {part.args[:80]!r}") from None
            if not isinstance(arguments, dict):
                raise TraceImportError(f"{where}.args: not a JSON object")
        result = self.results.get(part.tool_call_id)
        return ImportedCall(
            id=part.tool_call_id,
            name=part.tool_name,
            arguments=arguments,
            result=None if result is None else result[0],
            failed=False if result is None else result[1],
        )


def _count(usage: dict[str, Any], name: str, old_name: str, at: str) -> int:
    value = usage.get(name, usage.get(old_name, 0))
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceImportError(f"{at}.usage.{name}: not a token count: {value!r}")
    return value


def _conversation(history: list[msgspec.Raw], where: str, trace_id: str) -> ImportedConversation:
    builder = _Builder(where)
    for i, raw in enumerate(history):
        at = f"$[{i}]"
        message = _decode(raw, _Message, f"{where}: {at}")
        if builder.conversation_id is None:
            builder.conversation_id = message.conversation_id or message.run_id
        if message.kind == "request":
            builder.request(message, f"{where}: {at}")
        else:
            builder.response(message, f"{where}: {at}")
    if not builder.turns:
        raise TraceImportError(f"{where}: no user prompt in the history")
    turns: list[ImportedTurn] = []
    for prompt, at, responses in builder.turns:
        if not responses:
            raise TraceImportError(
                f"{at}: the user prompt has no model response after it (a truncated history?)"
            )
        # Steps are built once every tool return is known: a return comes after its call.
        steps = tuple(builder.step(r_at, message) for r_at, message in responses)
        turns.append(ImportedTurn(user_input=prompt, steps=steps, where=at))
    return ImportedConversation(
        source=VERSION,
        trace_id=builder.conversation_id or trace_id,
        name=trace_id.replace(":", "-"),
        turns=tuple(turns),
        model_name=builder.model_name,
    )
