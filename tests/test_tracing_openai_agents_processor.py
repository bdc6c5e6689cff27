"""`JsonlTraceProcessor`, driven by the SDK's own trace and span objects: one whole JSON
line per finished trace, in start order, from many threads at once; response spans keep
their content; bounded; never raising into the application; and importing `harness` or
`harness.tracing` imports no framework."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents.tracing import TracingProcessor
from agents.tracing.span_data import (
    AgentSpanData,
    FunctionSpanData,
    GenerationSpanData,
    GuardrailSpanData,
    HandoffSpanData,
    ResponseSpanData,
    SpanData,
)
from agents.tracing.spans import SpanImpl
from agents.tracing.traces import TraceImpl
from openai.types.responses import Response

from harness.tracing import JsonlTraceProcessor


def span(trace: TraceImpl, parent: SpanImpl[Any] | None, data: SpanData) -> SpanImpl[Any]:
    made = SpanImpl(
        trace.trace_id, None, parent.span_id if parent else None, trace._processor, data, None
    )
    made.start()
    return made


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


def called(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "function": function}],
        }
    ]


def said(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


def usage(n: int) -> dict[str, int]:
    return {"input_tokens": n, "output_tokens": 3}


def traced_run(
    processor: TracingProcessor, question: str = "Is INV-1 paid?", group: str | None = None
) -> str:
    """One SDK run's spans, as the Runner makes them: triage hands off, billing calls its
    tool and answers, a guardrail runs. Returns the trace id."""
    trace = TraceImpl("Billing desk", None, group, None, processor)
    trace.start()
    triage = span(trace, None, AgentSpanData("triage", handoffs=["billing"]))
    model = span(trace, triage, GenerationSpanData(input=user(question), model="m", usage=usage(7)))
    model.span_data.output = called("c1", "transfer_to_billing", {})
    model.finish()
    span(trace, triage, HandoffSpanData("triage", "billing")).finish()
    guard = span(trace, triage, GuardrailSpanData("no_pii", triggered=False))
    guard.finish()
    triage.finish()
    billing = span(trace, None, AgentSpanData("billing", tools=["lookup"]))
    model = span(
        trace, billing, GenerationSpanData(input=user(question), model="m", usage=usage(9))
    )
    model.span_data.output = called("c2", "lookup", {"invoice_id": "INV-1"})
    model.finish()
    span(
        trace, billing, FunctionSpanData("lookup", '{"invoice_id": "INV-1"}', "INV-1: paid")
    ).finish()
    model = span(
        trace, billing, GenerationSpanData(input=user(question), model="m", usage=usage(11))
    )
    model.span_data.output = said("INV-1 is paid.")
    model.finish()
    billing.finish()
    trace.finish()
    return trace.trace_id


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_each_finished_trace_is_one_line_with_its_spans_in_start_order(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace_id = traced_run(processor, group="conv-1")
    [line] = lines(out)
    assert line["format"] == "zeroclaw-openai-agents-trace/1"
    assert line["trace"]["id"] == trace_id and line["trace"]["group_id"] == "conv-1"
    kinds = [s["span_data"]["type"] for s in line["spans"]]
    assert kinds == [
        "agent",
        "generation",
        "handoff",
        "guardrail",
        "agent",
        "generation",
        "function",
        "generation",
    ]
    starts = [s["started_at"] for s in line["spans"]]
    assert starts == sorted(starts)
    assert line["spans"][6]["span_data"]["output"] == "INV-1: paid"


def test_a_trace_not_ended_is_not_written_and_spans_of_unknown_traces_are_ignored(
    tmp_path: Path,
) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace = TraceImpl("w", None, None, None, processor)
    trace.start()
    span(trace, None, AgentSpanData("a")).finish()
    assert not out.exists()
    stray = SpanImpl("trace_unknown", None, None, processor, AgentSpanData("b"), None)
    stray.start()
    stray.finish()
    trace.finish()
    assert [s["span_data"]["name"] for s in lines(out)[0]["spans"]] == ["a"]


def test_many_threads_write_whole_lines(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    made: list[str] = []

    def runs() -> None:
        for _ in range(25):
            made.append(traced_run(processor))

    threads = [threading.Thread(target=runs) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = lines(out)
    assert sorted(line["trace"]["id"] for line in written) == sorted(made)
    assert {len(line["spans"]) for line in written} == {8}
    for line in written:
        assert {s["trace_id"] for s in line["spans"]} == {line["trace"]["id"]}


def test_a_trace_over_its_bounds_is_written_as_incomplete_without_spans(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    traced_run(JsonlTraceProcessor(out, max_spans=3))
    traced_run(JsonlTraceProcessor(out, max_bytes=200))
    first, second = lines(out)
    assert first["incomplete"] == "more than 3 spans" and first["spans"] == []
    assert second["incomplete"] == "more than 200 bytes of spans" and second["spans"] == []


def test_a_failure_to_write_is_logged_once_and_never_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    processor = JsonlTraceProcessor(tmp_path)  # a directory: no line can be appended to it
    with caplog.at_level(logging.WARNING, logger="harness.tracing"):
        traced_run(processor)
        traced_run(processor)
    warned = [r for r in caplog.records if "JsonlTraceProcessor" in r.getMessage()]
    assert len(warned) == 1 and str(tmp_path) in warned[0].getMessage()


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-4.1",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "lookup",
            "arguments": '{"invoice_id": "INV-1"}',
            "status": "completed",
        }
    ],
    "usage": {
        "input_tokens": 12,
        "output_tokens": 4,
        "total_tokens": 16,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


def test_a_response_span_keeps_the_output_items_the_sdk_export_drops(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace = TraceImpl("w", None, None, None, processor)
    trace.start()
    data = ResponseSpanData(
        response=Response.model_validate(RESPONSE),
        input=[{"role": "user", "content": "Is INV-1 paid?"}],
        usage={"input_tokens": 12, "output_tokens": 4},
    )
    response = span(trace, None, data)
    assert "output" not in (response.export() or {})["span_data"]  # the SDK's own export
    response.finish()
    trace.finish()
    [kept] = lines(out)[0]["spans"]
    content = kept["span_data"]
    assert content["output"][0]["call_id"] == "call_1"
    assert content["input"] == [{"role": "user", "content": "Is INV-1 paid?"}]
    assert content["model"] == "gpt-4.1" and content["response_id"] == "resp_1"


def test_without_sensitive_data_a_response_span_keeps_only_its_id(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace = TraceImpl("w", None, None, None, processor)
    trace.start()
    data = ResponseSpanData(usage={"input_tokens": 12, "output_tokens": 4})
    data._response_id = "resp_1"  # as the SDK sets it with trace_include_sensitive_data off
    span(trace, None, data).finish()
    trace.finish()
    [kept] = lines(out)[0]["spans"]
    assert set(kept["span_data"]) == {"type", "response_id", "usage"}


def test_importing_harness_or_its_tracing_room_imports_no_framework() -> None:
    code = (
        "import sys, harness, harness.tracing\n"
        "assert 'agents' not in sys.modules and 'pydantic_ai' not in sys.modules\n"
        "from harness.tracing import JsonlTraceProcessor\n"
        "from agents.tracing import TracingProcessor\n"
        "assert issubclass(JsonlTraceProcessor, TracingProcessor)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_tool_output_of_text_parts_is_written_as_the_text_the_model_read(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace = TraceImpl("w", None, None, None, processor)
    trace.start()
    mcp = FunctionSpanData("lookup_order", "{}", {"type": "text", "text": "order 7: shipped"})
    span(trace, None, mcp).finish()
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    span(trace, None, FunctionSpanData("two", "{}", parts)).finish()
    span(trace, None, FunctionSpanData("number", "{}", 42)).finish()
    trace.finish()
    outputs = [s["span_data"]["output"] for s in lines(out)[0]["spans"]]
    assert outputs == ["order 7: shipped", "ab", "42"]
