"""The SDK trace source: traces written by `JsonlTraceProcessor` from the SDK's own span
objects (and the SDK's exported batches) read into conversations; runs of one conversation
grouped by group id; and every bad input a clear `TraceImportError` naming the file, trace
and span, never a traceback."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest
from test_tracing_openai_agents_processor import RESPONSE, span, traced_run, user

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents.tracing.span_data import ResponseSpanData
from agents.tracing.spans import SpanImpl
from agents.tracing.traces import TraceImpl
from openai.types.responses import Response

from harness.tracing import JsonlTraceProcessor
from harness.tracing.conversation import ImportedConversation, TraceImportError
from harness.tracing.openai_agents_traces import read, sniff
from harness.tracing.sources import detect


def conversations(path: Path) -> list[ImportedConversation]:
    return list(read(path, limit_bytes=1 << 20))


def written(tmp_path: Path, *groups: str | None) -> Path:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    for index, group in enumerate(groups):
        traced_run(processor, f"question {index}", group)
    return out


def rewrite(path: Path, change: Any) -> None:
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    for record in records:
        change(record)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def refusal(path: Path) -> str:
    with pytest.raises(TraceImportError) as caught:
        conversations(path)
    return str(caught.value)


def test_a_run_is_read_into_steps_calls_results_handoffs_and_tokens(tmp_path: Path) -> None:
    path = written(tmp_path, None)
    assert detect(path).FORMAT == "openai-agents"
    [conversation] = conversations(path)
    assert conversation.source == "openai-agents-jsonl/1"
    assert conversation.name == "Billing desk" and conversation.model_name == "m"
    assert conversation.agents == ("triage", "billing")
    assert conversation.handoffs == (("triage", "billing"),)
    assert conversation.final_agent == "billing"
    [turn] = conversation.turns
    assert turn.user_input == "question 0"
    handoff, lookup, answer = turn.steps
    assert (handoff.agent, handoff.calls[0].kind, handoff.calls[0].target) == (
        "triage",
        "handoff",
        "billing",
    )
    assert lookup.calls[0].arguments == {"invoice_id": "INV-1"}
    assert lookup.calls[0].result == "INV-1: paid" and lookup.input_tokens == 9
    assert answer.text == "INV-1 is paid." and answer.agent == "billing"
    assert conversation.instructions["triage"] == "Be brief."


def test_runs_sharing_a_group_id_are_the_turns_of_one_conversation(tmp_path: Path) -> None:
    path = written(tmp_path, "conv-a", None, "conv-a", "conv-b")
    found = {c.trace_id: c for c in conversations(path)}
    assert len(found) == 4 - 1
    assert [t.user_input for t in found["conv-a"].turns] == ["question 0", "question 2"]
    assert [t.user_input for t in found["conv-b"].turns] == ["question 3"]
    assert found["conv-a"].starts == ("triage", "triage")


def test_spans_in_any_order_in_the_file_are_read_in_start_order(tmp_path: Path) -> None:
    path = written(tmp_path, None)
    expected = conversations(path)
    rewrite(path, lambda record: random.Random(7).shuffle(record["spans"]))
    assert conversations(path) == expected


def test_a_response_span_the_processor_kept_is_a_step(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    processor = JsonlTraceProcessor(out)
    trace = TraceImpl("w", None, None, None, processor)
    trace.start()
    data = ResponseSpanData(
        response=Response.model_validate(RESPONSE), input=user("Is INV-1 paid?")
    )
    span(trace, None, data).finish()
    trace.finish()
    [conversation] = conversations(out)
    [step] = conversation.turns[0].steps
    assert step.calls[0].id == "call_1" and step.calls[0].arguments == {"invoice_id": "INV-1"}
    assert (step.input_tokens, step.output_tokens) == (12, 4)
    assert conversation.model_name == "gpt-4.1"


def test_the_sdk_exported_batch_is_read_and_its_response_spans_refused(tmp_path: Path) -> None:
    class Keep(JsonlTraceProcessor):
        items: ClassVar[list[dict[str, Any]]] = []

        def on_trace_start(self, trace: Any) -> None:
            self.items.append(trace.export())

        def on_span_end(self, span: Any) -> None:
            self.items.append(span.export())

    traced_run(Keep(tmp_path / "unused.jsonl"))
    batch = tmp_path / "export.json"
    batch.write_text(json.dumps({"data": Keep.items}, indent=2), encoding="utf-8")
    assert sniff(batch.read_bytes()[:4096]) or detect(batch, "openai-agents")
    [conversation] = conversations(batch)
    assert conversation.source == "openai-agents-export/1"
    assert conversation.turns[0].steps[-1].text == "INV-1 is paid."

    batch.write_text(json.dumps({"data": Keep.items}) * 2 + "\n", encoding="utf-8")
    with pytest.raises(TraceImportError, match="trailing characters"):
        conversations(batch)  # two documents on one line: no batch file, and no lines
    batch.write_text((json.dumps({"data": Keep.items}) + "\n") * 2, encoding="utf-8")
    assert len(conversations(batch)[0].turns) == 2  # a batch a line: the same run twice

    trace = TraceImpl("w", None, None, None, Keep(tmp_path / "unused.jsonl"))
    response = SpanImpl(
        trace.trace_id, "span_resp", None, trace._processor, ResponseSpanData(), None
    )
    response.span_data._response_id = "resp_1"
    Keep.items[:] = [
        trace.export(),
        {**(response.export() or {}), "started_at": "2026-01-01T00:00:00"},
    ]
    batch.write_text(json.dumps({"data": Keep.items}), encoding="utf-8")
    said = refusal(batch)
    assert "span span_resp" in said and "keeps only the response id" in said


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda r: r["spans"][2]["span_data"].update(type="teleport"),
            "unknown span type 'teleport'",
        ),
        (lambda r: r["spans"][6].update(parent_id="span_gone"), "its parent span_gone is not in"),
        (lambda r: r["spans"][1]["span_data"].update(input=None), "keeps no model input"),
        (lambda r: r["spans"][1]["span_data"].update(output=None), "keeps no model output"),
        (lambda r: r["spans"][1].update(started_at="yesterday"), "is no ISO time"),
        (lambda r: r["spans"].pop(5), "a call of tool 'lookup' that no earlier model answer"),
        (lambda r: r["spans"].pop(1), "a handoff from 'triage' that no model answer"),
        (
            lambda r: r["spans"][5]["span_data"]["output"][0]["tool_calls"][0]["function"].update(
                arguments="{not json"
            ),
            "its arguments are no JSON object",
        ),
        (lambda r: r["spans"][1]["span_data"].update(usage={"input_tokens": -1}), "no token count"),
        (lambda r: r.update(incomplete="more than 3 spans"), "incomplete (more than 3 spans)"),
        (
            lambda r: r.update(
                spans=[
                    r["spans"][0],
                    {
                        **r["spans"][3],
                        "span_data": {**r["spans"][3]["span_data"], "triggered": True},
                    },
                ]
            ),
            "guardrail 'no_pii' stopped the run before any model call",
        ),
        (lambda r: r.update(format="zeroclaw-openai-agents-trace/9"), "reads zeroclaw-openai"),
    ],
)
def test_bad_input_is_refused_naming_the_file_the_trace_and_the_span(
    tmp_path: Path, change: Any, said: str
) -> None:
    path = written(tmp_path, None)
    trace_id = json.loads(path.read_text("utf-8"))["trace"]["id"]
    rewrite(path, change)
    refused = refusal(path)
    assert said in refused and str(path) in refused
    if not said.startswith("reads"):
        assert trace_id in refused


def test_a_truncated_last_line_is_said_and_passed_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = written(tmp_path, None, None)
    text = path.read_text("utf-8")
    path.write_text(text[: len(text) - 200], encoding="utf-8")  # the writer stopped mid-line
    with caplog.at_level("WARNING", logger="harness.tracing"):
        assert len(conversations(path)) == 1
    assert "line 2: a truncated last line" in caplog.text


def test_a_damaged_line_that_is_not_the_last_is_refused(tmp_path: Path) -> None:
    path = written(tmp_path, None)
    path.write_text("{half\n" + path.read_text("utf-8"), encoding="utf-8")
    assert "line 1: not JSON" in refusal(path)


def test_a_line_over_the_limit_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text('{"format": "zeroclaw-openai-agents-trace/1", "x": "' + "a" * 300_000, "utf-8")
    with pytest.raises(TraceImportError, match="line 1: longer than the 100000-byte limit"):
        list(read(path, limit_bytes=100_000))


def test_a_file_of_another_format_is_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"resourceSpans": []}\n', encoding="utf-8")
    assert detect(path).FORMAT == "otlp-genai"
    path.write_text('{"events": [{"name": "x"}]}\n', encoding="utf-8")
    with pytest.raises(TraceImportError, match="not a trace format this version reads"):
        detect(path)
