"""The OpenAI Agents SDK's traces as conversations: the JSON lines `JsonlTraceProcessor`
writes (`zeroclaw-openai-agents-trace/1`), and the SDK's own exported trace JSON (the
`{"data": [...]}` batches its backend exporter posts) where it holds enough.

Each `Runner.run` is a trace of its own; the runs of one conversation are linked by the
trace's `group_id` (as the SDK documents), so traces sharing one become the turns of one
conversation, in the order they started, and a trace without one is a conversation alone.
Within a trace, spans are taken in the order they started: each generation or response span
is a model answer of the agent whose span holds it, function spans give the results of its
calls, handoff spans say which call was a handoff and where it went, guardrail spans which
tripped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from harness.io.files import InputError, decode_json, read_bounded
from harness.tracing.conversation import ImportedConversation, ImportedTurn, TraceImportError
from harness.tracing.openai_agents_spans import TracePiece, piece_of
from harness.tracing.sources import head_of, json_lines

FORMAT = "openai-agents"
LINE_FORMAT = "zeroclaw-openai-agents-trace/"
VERSION = 1
SOURCE = f"openai-agents-jsonl/{VERSION}"
EXPORT_SOURCE = "openai-agents-export/1"
MAX_TRACES = 100_000

_LINE = re.compile(rb'^\s*\{\s*"format"\s*:\s*"zeroclaw-openai-agents-trace/')
_EXPORT = re.compile(rb'^\s*\{\s*"data"\s*:\s*\[\s*\{[^{}]*"object"\s*:\s*"trace')


def sniff(head: bytes) -> bool:
    return bool(_LINE.match(head) or _EXPORT.match(head))


def read(path: Path, *, limit_bytes: int) -> Iterator[ImportedConversation]:
    """The conversations of `path`, grouped by group id, each in the order its first run
    started."""
    pieces: list[TracePiece] = []
    for record, source, where in _records(path, limit_bytes):
        pieces.append(piece_of(record, source, where))
        if len(pieces) > MAX_TRACES:
            raise TraceImportError(f"{path}: more than {MAX_TRACES} traces; split the file")
    yield from _conversations(pieces)


def _records(path: Path, limit_bytes: int) -> Iterator[tuple[dict[str, Any], str, str]]:
    if _EXPORT.match(head_of(path)):
        yield from _exported(path, limit_bytes)
    else:
        yield from _lines(path, limit_bytes)


def _lines(path: Path, limit_bytes: int) -> Iterator[tuple[dict[str, Any], str, str]]:
    for line in json_lines(path, limit_bytes=limit_bytes):
        where = f"{path}: line {line.number}"
        value = line.value
        if not isinstance(value, dict) or "format" not in value:
            if isinstance(value, dict) and "data" in value:
                yield from _batch(value, where)
                continue
            raise TraceImportError(f'{where}: not a trace line (no "format")')
        fmt = value["format"]
        if not isinstance(fmt, str) or not fmt.startswith(LINE_FORMAT):
            raise TraceImportError(f"{where}: format {fmt!r} is not {LINE_FORMAT}{VERSION}")
        if fmt != f"{LINE_FORMAT}{VERSION}":
            raise TraceImportError(
                f"{where}: format {fmt!r}: this version reads {LINE_FORMAT}{VERSION} only"
            )
        yield value, SOURCE, where


def _exported(path: Path, limit_bytes: int) -> Iterator[tuple[dict[str, Any], str, str]]:
    """The SDK exporter's batch as one JSON document; a file of several, one a line, is
    read as lines (`_records`)."""
    try:
        data = decode_json(read_bounded(path, limit_bytes))
    except InputError as exc:
        raise TraceImportError(f"{path}: {exc.reason}") from None
    except msgspec.DecodeError as exc:
        if "trailing characters" in str(exc):  # a batch a line
            yield from _lines(path, limit_bytes)
            return
        raise TraceImportError(f"{path}: not JSON (truncated?): {exc}") from None
    if not isinstance(data, dict):
        raise TraceImportError(f'{path}: not an exported trace batch ({{"data": [...]}})')
    yield from _batch(data, str(path))


def _batch(data: dict[str, Any], where: str) -> Iterator[tuple[dict[str, Any], str, str]]:
    """The SDK exporter's batch: traces and spans as separate items, spans naming their
    trace; rebuilt into one record per trace."""
    items = data.get("data")
    if not isinstance(items, list):
        raise TraceImportError(f'{where}: "data" is not a list of traces and spans')
    traces: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[Any]] = {}
    for index, item in enumerate(items):
        kind = item.get("object") if isinstance(item, dict) else None
        if kind == "trace" and isinstance(item.get("id"), str):
            traces[item["id"]] = item
        elif kind == "trace.span" and isinstance(item.get("trace_id"), str):
            spans.setdefault(item["trace_id"], []).append(item)
        else:
            raise TraceImportError(f"{where}: data[{index}]: neither a trace nor a span")
    for trace_id in spans.keys() - traces.keys():
        raise TraceImportError(
            f"{where}: spans of trace {trace_id} without the trace itself (a batch cut short?)"
        )
    for trace_id, header in traces.items():
        record = {"trace": header, "spans": spans.get(trace_id, [])}
        yield record, EXPORT_SOURCE, f"{where}: trace {trace_id}"


def _conversations(pieces: list[TracePiece]) -> Iterator[ImportedConversation]:
    groups: dict[str, list[TracePiece]] = {}
    for piece in pieces:
        groups.setdefault(piece.group_id or piece.trace_id, []).append(piece)
    for key, group in groups.items():
        group.sort(key=lambda p: p.started_at)
        yield _joined(key, group)


def _joined(key: str, group: list[TracePiece]) -> ImportedConversation:
    first, last = group[0], group[-1]
    turns: list[ImportedTurn] = [p.turn for p in group]
    agents: dict[str, None] = {}
    instructions: dict[str, str] = {}
    for piece in group:
        for agent in piece.agents:
            agents.setdefault(agent, None)
        instructions.update(piece.instructions)
    return ImportedConversation(
        source=first.source,
        trace_id=key,
        name=first.name,
        turns=tuple(turns),
        model_name=next((p.model for p in group if p.model), None),
        agents=tuple(agents),
        final_agent=last.final_agent,
        handoffs=tuple(h for p in group for h in p.handoffs),
        guardrails_tripped=tuple(g for p in group for g in p.guardrails_tripped),
        failed=any(p.failed for p in group),
        instructions=instructions,
        starts=tuple(p.first_agent for p in group),
        runs=tuple(p.trace_id for p in group),
    )
