"""Trace import: production traces turned into replay fixtures. The sources that read a
recorded trace (the OpenAI Agents SDK's own traces, written by `JsonlTraceProcessor`;
OpenTelemetry GenAI spans in OTLP JSON; pydantic-ai's message history), the neutral
conversation they all produce, redaction, the expectations a trace proves, `zeroclaw eval
import`. The grades sent back to the tracing world as OpenTelemetry evaluation events are
an output of a run, so a reporter's (`reporters/otel_events`).
"""
