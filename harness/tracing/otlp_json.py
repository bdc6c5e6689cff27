"""OTLP JSON trace files, as the OpenTelemetry Collector's file exporter writes them: one
`{"resourceSpans": [...]}` document a line, trace and span ids in hex, attribute values as
`{"stringValue" | "intValue" | ...}` (64-bit integers as strings). Read into plain span
records grouped by trace, whatever the conventions of their attributes: what the records
mean is the GenAI source's (`otlp_genai`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from harness.io.files import InputError, decode_json, read_bounded
from harness.tracing.conversation import TraceImportError

# What is said while reading (a truncated last line passed over), for the command to show.
LOG = logging.getLogger("harness.tracing")


class _ArrayValue(msgspec.Struct):
    values: list[_AnyValue] = []


class _KvList(msgspec.Struct):
    values: list[_KeyValue] = []


class _AnyValue(msgspec.Struct):
    stringValue: str | None = None
    boolValue: bool | None = None
    intValue: int | str | None = None
    doubleValue: float | None = None
    arrayValue: _ArrayValue | None = None
    kvlistValue: _KvList | None = None
    bytesValue: str | None = None


class _KeyValue(msgspec.Struct):
    key: str
    value: _AnyValue = msgspec.field(default_factory=_AnyValue)


class _Event(msgspec.Struct):
    name: str = ""
    attributes: list[_KeyValue] = []


class _Status(msgspec.Struct):
    code: int | str = 0


class _Span(msgspec.Struct):
    traceId: str
    spanId: str
    name: str = ""
    parentSpanId: str = ""
    startTimeUnixNano: int | str = 0
    attributes: list[_KeyValue] = []
    events: list[_Event] = []
    status: _Status | None = None


class _ScopeSpans(msgspec.Struct):
    spans: list[_Span] = []


class _ResourceSpans(msgspec.Struct):
    scopeSpans: list[_ScopeSpans] = []


class _Document(msgspec.Struct):
    resourceSpans: list[_ResourceSpans]


def _value(value: _AnyValue) -> Any:
    """An OTLP attribute value as plain Python (64-bit integers arrive as strings in JSON)."""
    if value.stringValue is not None:
        return value.stringValue
    if value.boolValue is not None:
        return value.boolValue
    if value.intValue is not None:
        return int(value.intValue)
    if value.doubleValue is not None:
        return value.doubleValue
    if value.arrayValue is not None:
        return [_value(v) for v in value.arrayValue.values]
    if value.kvlistValue is not None:
        return {kv.key: _value(kv.value) for kv in value.kvlistValue.values}
    return value.bytesValue


@dataclass
class SpanRecord:
    trace_id: str
    span_id: str
    parent: str
    name: str
    start: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    error: bool
    where: str

    @property
    def operation(self) -> str | None:
        operation = self.attributes.get("gen_ai.operation.name")
        return operation if isinstance(operation, str) else None


def read_spans(path: Path, *, limit_bytes: int) -> dict[str, dict[str, SpanRecord]]:
    """Every span of the file, by trace id, then span id."""
    try:
        data = read_bounded(path, limit_bytes)
    except InputError as exc:
        raise TraceImportError(f"{path}: {exc.reason}") from None
    traces: dict[str, dict[str, SpanRecord]] = {}
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            read = list(_spans(line, f"{path}: line {number}"))
        except TraceImportError as exc:
            if number < len(lines) or "truncated" not in str(exc):
                raise
            # A last line without its newline that does not parse: the exporter was
            # stopped mid-write. What it had written whole is still read.
            LOG.warning("%s: line %d: a truncated last line, passed over", path, number)
            break
        for span in read:
            spans = traces.setdefault(span.trace_id, {})
            if span.span_id in spans:
                raise TraceImportError(f"{span.where}: the span appears twice in the file")
            spans[span.span_id] = span
    return traces


def _spans(line: bytes, where: str) -> Iterator[SpanRecord]:
    try:
        document = decode_json(line, _Document)
    except msgspec.DecodeError as exc:
        raise TraceImportError(f"{where}: not an OTLP JSON trace document: {exc}") from None
    for resource in document.resourceSpans:
        for scope in resource.scopeSpans:
            for span in scope.spans:
                yield _record(span, where)


def _hex_id(value: str, length: int, what: str, where: str) -> str:
    lowered = value.lower()
    if len(lowered) != length or any(c not in "0123456789abcdef" for c in lowered):
        raise TraceImportError(
            f"{where}: {what} {value[:48]!r} is not {length} hex digits (the OTLP file "
            "exporter writes ids in hex; the plain proto3 JSON mapping's base64 is not read)"
        )
    return lowered


def _record(span: _Span, where: str) -> SpanRecord:
    trace_id = _hex_id(span.traceId, 32, "traceId", where)
    span_id = _hex_id(span.spanId, 16, "spanId", where)
    parent = _hex_id(span.parentSpanId, 16, "parentSpanId", where) if span.parentSpanId else ""
    code = span.status.code if span.status is not None else 0
    try:
        start = int(span.startTimeUnixNano)
    except ValueError:
        raise TraceImportError(f"{where}: span {span_id}: startTimeUnixNano is no time") from None
    try:
        attributes = {kv.key: _value(kv.value) for kv in span.attributes}
        events = [(e.name, {kv.key: _value(kv.value) for kv in e.attributes}) for e in span.events]
    except ValueError:  # an intValue that is no integer
        raise TraceImportError(f"{where}: span {span_id}: an intValue is no integer") from None
    except RecursionError:
        raise TraceImportError(f"{where}: span {span_id}: attributes nested too deeply") from None
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent=parent,
        name=span.name,
        start=start,
        attributes=attributes,
        events=events,
        error=code in (2, "STATUS_CODE_ERROR"),
        where=f"{where.rpartition(': line')[0]}: trace {trace_id} span {span_id} ({span.name})",
    )
