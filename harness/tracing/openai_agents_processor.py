"""`JsonlTraceProcessor`: the OpenAI Agents SDK's finished traces, each written as one JSON
line with all its spans, for `zeroclaw eval import` to turn into replay fixtures.

    from agents import add_trace_processor
    from harness.tracing import JsonlTraceProcessor

    add_trace_processor(JsonlTraceProcessor("traces.jsonl"))

Each line is `{"format": FORMAT, "trace": {...}, "spans": [...]}`, the spans in the order
they started, each as the SDK exports it, except that a response span also keeps what the
import needs and the SDK's own export drops (the response's output items, its input, model
and usage). Only what the SDK put in a span is written: with `trace_include_sensitive_data`
off, the SDK keeps no model input or output in its spans, and neither does the line.

A trace's spans are held until the trace ends, then written as one whole line appended to
the file, and dropped; a trace over `max_spans` or `max_bytes` is written as its header
alone, marked incomplete (the import refuses it by name). Nothing here raises into the
application: a failure to write is logged once, and the trace is lost.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import FunctionSpanData, ResponseSpanData

FORMAT = "zeroclaw-openai-agents-trace/1"
MAX_SPANS = 10_000
MAX_BYTES = 32 << 20
# Traces begun and not yet ended: a process whose traces never end holds no more.
MAX_OPEN_TRACES = 1_000

LOG = logging.getLogger("harness.tracing")


class _Open:
    """One trace being written: its header and its spans, in the order they started (a
    span still running is held as the SDK's object, then as its exported dict)."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.spans: dict[str, Span[Any] | dict[str, Any]] = {}
        self.size = 0
        self.incomplete: str | None = None


class JsonlTraceProcessor(TracingProcessor):
    """Appends each finished trace of the SDK to `path` as one JSON line (see the module)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_spans: int = MAX_SPANS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.path = Path(path)
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._warned = False

    def on_trace_start(self, trace: Trace) -> None:
        try:
            header = dict(trace.export() or {})
            header.setdefault("id", trace.trace_id)
            header["started_at"] = datetime.now(timezone.utc).isoformat()
            with self._lock:
                if len(self._open) >= MAX_OPEN_TRACES:
                    self._warn_once(f"more than {MAX_OPEN_TRACES} traces open; not keeping more")
                    return
                self._open[trace.trace_id] = _Open(header)
        except Exception as exc:  # never into the application
            self._warn_once(f"cannot keep a trace: {exc!r}")

    def on_span_start(self, span: Span[Any]) -> None:
        try:
            with self._lock:
                held = self._open.get(span.trace_id)
                if held is None or held.incomplete is not None:
                    return
                if len(held.spans) >= self.max_spans:
                    self._give_up(held, f"more than {self.max_spans} spans")
                    return
                held.spans[span.span_id] = span
        except Exception as exc:
            self._warn_once(f"cannot keep a span: {exc!r}")

    def on_span_end(self, span: Span[Any]) -> None:
        try:
            exported = span_record(span)
            size = len(json.dumps(exported, default=str))
            with self._lock:
                held = self._open.get(span.trace_id)
                if held is None or held.incomplete is not None or span.span_id not in held.spans:
                    return
                held.size += size
                if held.size > self.max_bytes:
                    self._give_up(held, f"more than {self.max_bytes} bytes of spans")
                    return
                held.spans[span.span_id] = exported
        except Exception as exc:
            self._warn_once(f"cannot keep a span: {exc!r}")

    def on_trace_end(self, trace: Trace) -> None:
        try:
            with self._lock:
                held = self._open.pop(trace.trace_id, None)
            if held is None:
                return
            self._write(line_of(held))
        except Exception as exc:
            self._warn_once(f"cannot write a trace to {self.path}: {exc!r}")

    def shutdown(self) -> None:
        with self._lock:
            self._open.clear()

    def force_flush(self) -> None:
        # Every line is written as its trace ends: nothing is buffered.
        return None

    def _give_up(self, held: _Open, why: str) -> None:
        held.incomplete = why
        held.spans.clear()

    def _write(self, line: bytes) -> None:
        with self._write_lock:
            # One write of the whole line in append mode: a crash leaves no half line that
            # a later line would be glued to, short of the rare partial write handled here.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                view = memoryview(line)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)

    def _warn_once(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            LOG.warning("JsonlTraceProcessor: %s (said once)", message)


def line_of(held: _Open) -> bytes:
    """The trace's JSON line, its newline included."""
    spans = [s if isinstance(s, dict) else span_record(s) for s in held.spans.values()]
    document: dict[str, Any] = {"format": FORMAT, "trace": held.header, "spans": spans}
    if held.incomplete is not None:
        document["incomplete"] = held.incomplete
    text = json.dumps(document, ensure_ascii=False, default=str, separators=(",", ":"))
    return (text + "\n").encode("utf-8", "surrogatepass")


def span_record(span: Span[Any]) -> dict[str, Any]:
    """The span as the SDK exports it, a response span with its content added."""
    exported = dict(span.export() or {})
    exported.pop("object", None)
    data = span.span_data
    if isinstance(data, FunctionSpanData) and data.output is not None:
        # The SDK's export says `str(output)`: a Python repr for an MCP tool's text part.
        exported["span_data"] = {**exported.get("span_data", {}), "output": _text(data.output)}
    if isinstance(data, ResponseSpanData):
        content = dict(exported.get("span_data") or {})
        response = data.response
        if response is not None:
            dumped = response.model_dump(mode="json", exclude_none=True)
            content["model"] = dumped.get("model")
            content["output"] = dumped.get("output")
            content["usage"] = data.usage or dumped.get("usage")
        if data.input is not None:
            content["input"] = _plain(data.input)
        exported["span_data"] = content
    return exported


def _text(output: Any) -> str:
    """A tool's output as the model reads it: text, or the text of its text parts (an MCP
    tool's output is one `{"type": "text", "text": ...}` part, or a list of them)."""
    if isinstance(output, str):
        return output
    parts = output if isinstance(output, list) else [output]
    if all(isinstance(p, dict) and p.get("type") == "text" for p in parts):
        return "".join(str(p.get("text", "")) for p in parts)
    return str(output)


def _plain(value: Any) -> Any:
    """A response's input as JSON values (the SDK keeps items as dicts or models)."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
