"""Trace import: production traces turned into replay fixtures. The sources that read a
recorded trace (the OpenAI Agents SDK's own traces, written by `JsonlTraceProcessor`;
OpenTelemetry GenAI spans in OTLP JSON; pydantic-ai's message history), the neutral
conversation they all produce, redaction, the expectations a trace proves, `zeroclaw eval
import`. The grades sent back to the tracing world as OpenTelemetry evaluation events are
an output of a run, so a reporter's (`reporters/otel_events`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.tracing.openai_agents_processor import JsonlTraceProcessor as JsonlTraceProcessor

__all__ = ["JsonlTraceProcessor"]


def __getattr__(name: str) -> Any:
    # Resolved on first use: importing `harness.tracing` imports no agent framework.
    if name == "JsonlTraceProcessor":
        from harness.tracing.openai_agents_processor import JsonlTraceProcessor

        return JsonlTraceProcessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
