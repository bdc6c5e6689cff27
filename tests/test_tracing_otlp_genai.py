"""`harness.tracing.otlp_genai` (and `otlp_json`, the file format under it): OpenTelemetry
GenAI spans in OTLP JSON read into the conversation every source produces.

The traces are real: a pydantic-ai agent run with its instrumentation on against the
loopback OpenAI-compatible server, its spans sent by the OpenTelemetry SDK's
`OTLPSpanExporter` (OTLP/HTTP, protobuf) to a loopback receiver that decodes them with
opentelemetry-proto and writes the collector file exporter's JSON (`_otlp_receiver`). The
older event spellings come from spans made with the OpenTelemetry SDK as the
instrumentations of that time made them. The imported conversation replays green through
the same agent and fails on a broken one.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _imported import (
    PROMPTS,
    dumped,
    exported,
    failing,
    fixture_of,
    replay,
    shop_module,
)
from _openai_server import OpenAIServer, status, text_reply, tool_reply
from _otlp_receiver import OtlpFileReceiver
from conftest import Cli, write_module, write_suite
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from harness.tracing.conversation import ImportedConversation, TraceImportError
from harness.tracing.otlp_genai import EVENTS_VERSION, VERSION, read, sniff

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

LIMIT = 1 << 22


def read_all(path: Path, limit: int = LIMIT) -> list[ImportedConversation]:
    return list(read(path, limit_bytes=limit))


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return shop_module(tmp_path, monkeypatch)


@pytest.fixture
def traces(tmp_path: Path, shop: str) -> Path:
    return exported(tmp_path / "traces.jsonl", shop)


def test_a_real_pydantic_ai_trace_is_read_as_one_conversation_of_two_turns(traces: Path) -> None:
    (conversation,) = read_all(traces)
    assert conversation.source == VERSION
    documents = [json.loads(line) for line in traces.read_text().splitlines()]
    ids = {
        a["value"]["stringValue"]
        for s in all_spans(documents)
        for a in s["attributes"]
        if a["key"] == "gen_ai.conversation.id"
    }
    assert {conversation.trace_id} == ids
    assert [t.user_input for t in conversation.turns] == list(PROMPTS)
    calls = [(c.id, c.name, c.arguments, c.failed, c.result) for c in conversation.calls()]
    assert calls == [
        (
            "call_1",
            "order_status",
            {"order_id": "100"},
            True,
            "there is no order 100: order ids look like A-100",
        ),
        (
            "call_2",
            "order_status",
            {"order_id": "A-100"},
            False,
            "order A-100 for Grace: shipped on Monday",
        ),
        ("call_3", "cancel_order", {"order_id": "A-200"}, False, "order A-200 cancelled"),
    ]
    steps = [s for t in conversation.turns for s in t.steps]
    assert [s.text for s in steps] == [
        None,
        None,
        "Your order A-100 shipped on Monday.",
        None,
        "Order A-200 is cancelled.",
    ]
    assert [s.input_tokens for s in steps] == [120, 160, 200, 230, 260]
    assert [s.output_tokens for s in steps] == [5, 5, 9, 5, 7]
    assert {s.agent for s in steps} == {"shop"}
    assert (conversation.name, conversation.agents, conversation.final_agent) == (
        "shop",
        ("shop",),
        "shop",
    )
    assert conversation.model_name == "shop-model"
    assert "Look orders up; never guess." in conversation.instructions["shop"]
    assert "trace " in steps[0].where and "(chat shop-model)" in steps[0].where
    assert not conversation.failed


def test_the_imported_trace_replays_green_and_fails_on_the_broken_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shop: str, traces: Path
) -> None:
    (conversation,) = read_all(traces)
    case = replay(tmp_path / "green", conversation, shop)
    assert case.error is None, case.error
    assert case.passed, (failing(case), dumped(conversation))

    broken = shop_module(tmp_path, monkeypatch, broken=True)
    case = replay(tmp_path / "red", conversation, broken)
    assert case.error is None, case.error
    (check, detail), *_ = failing(case).items()
    assert check.startswith('tool_results_contain("order_status"')
    assert "lost in transit" in detail


@pytest.mark.parametrize("version", [2, 3, 4, 6])
def test_every_current_pydantic_ai_format_version_reads_the_same(
    tmp_path: Path, shop: str, traces: Path, version: int
) -> None:
    (default,) = read_all(traces)
    (other,) = read_all(exported(tmp_path / f"v{version}.jsonl", shop, version=version))
    assert script(other) == script(default)


def script(conversation: ImportedConversation) -> list[Any]:
    """What a fixture scripts of the conversation (no span ids: they differ run to run)."""
    return [
        (t.user_input, [(s.text, s.calls, s.input_tokens, s.output_tokens) for s in t.steps])
        for t in conversation.turns
    ]


def all_spans(documents: list[Any]) -> Iterator[dict[str, Any]]:
    for document in documents:
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                yield from scope["spans"]


def attribute(span: dict[str, Any], key: str) -> Any:
    for kv in span["attributes"]:
        if kv["key"] == key:
            return next(iter(kv["value"].values()))
    return None


def set_attribute(span: dict[str, Any], key: str, value: Any) -> None:
    span["attributes"] = [kv for kv in span["attributes"] if kv["key"] != key]
    if value is not None:
        kind = "intValue" if isinstance(value, int) else "stringValue"
        span["attributes"].append({"key": key, "value": {kind: value}})


def one_span_a_line(documents: list[Any]) -> list[Any]:
    return [
        {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": [span]}]}]}
        for span in all_spans(documents)
    ]


def load(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, documents: list[Any]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return path


def test_spans_in_any_order_in_the_file_read_in_the_order_they_started(
    tmp_path: Path, traces: Path
) -> None:
    (expected,) = read_all(traces)
    documents = one_span_a_line(load(traces))
    random.Random(7).shuffle(documents)
    (shuffled,) = read_all(write(tmp_path / "shuffled.jsonl", documents))
    assert script(shuffled) == script(expected)


def test_traces_without_a_conversation_id_are_a_conversation_each(
    tmp_path: Path, traces: Path
) -> None:
    documents = load(traces)
    for span in all_spans(documents):
        set_attribute(span, "gen_ai.conversation.id", None)
    first, second = read_all(write(tmp_path / "apart.jsonl", documents))
    assert [t.user_input for t in first.turns] == [PROMPTS[0]]
    assert [t.user_input for t in second.turns] == [PROMPTS[1]]
    assert len(first.trace_id) == 32 and first.trace_id != second.trace_id


def edited_refusal(tmp_path: Path, traces: Path, edit: Any) -> str:
    documents = load(traces)
    spans = sorted(all_spans(documents), key=lambda s: int(s["startTimeUnixNano"]))
    edit(spans)
    with pytest.raises(TraceImportError) as raised:
        read_all(write(tmp_path / "edited.jsonl", documents))
    return str(raised.value)


def chats(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in spans if attribute(s, "gen_ai.operation.name") == "chat"]


def test_an_unknown_operation_is_refused_naming_the_span_and_attribute(
    tmp_path: Path, traces: Path
) -> None:
    def edit(spans: list[dict[str, Any]]) -> None:
        set_attribute(chats(spans)[1], "gen_ai.operation.name", "teleport")

    message = edited_refusal(tmp_path, traces, edit)
    assert "edited.jsonl: trace " in message and " span " in message
    assert "gen_ai.operation.name 'teleport' is not read" in message


def test_an_answer_it_cannot_replay_is_refused_naming_the_part(
    tmp_path: Path, traces: Path
) -> None:
    def edit(spans: list[dict[str, Any]]) -> None:
        blob = [{"role": "assistant", "parts": [{"type": "blob", "mime_type": "image/png"}]}]
        set_attribute(chats(spans)[2], "gen_ai.output.messages", json.dumps(blob))

    message = edited_refusal(tmp_path, traces, edit)
    assert "gen_ai.output.messages[0].parts[0]: part type 'blob' cannot be replayed" in message


def test_several_choices_are_refused(tmp_path: Path, traces: Path) -> None:
    def edit(spans: list[dict[str, Any]]) -> None:
        answer = {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}
        set_attribute(chats(spans)[2], "gen_ai.output.messages", json.dumps([answer, answer]))

    assert "holds 2 choices" in edited_refusal(tmp_path, traces, edit)


def test_a_turn_whose_first_request_is_missing_is_refused(tmp_path: Path, traces: Path) -> None:
    def edit(spans: list[dict[str, Any]]) -> None:
        set_attribute(chats(spans)[0], "gen_ai.operation.name", None)  # its chat span lost

    message = edited_refusal(tmp_path, traces, edit)
    assert "was sent no user text in gen_ai.input.messages (a truncated trace?)" in message


def test_a_token_count_that_is_no_count_is_refused(tmp_path: Path, traces: Path) -> None:
    def edit(spans: list[dict[str, Any]]) -> None:
        set_attribute(chats(spans)[0], "gen_ai.usage.input_tokens", "many")

    assert "gen_ai.usage.input_tokens is not a token count: 'many'" in edited_refusal(
        tmp_path, traces, edit
    )


def test_content_left_out_by_the_instrumentation_is_refused(tmp_path: Path, shop: str) -> None:
    path = exported(tmp_path / "no-content.jsonl", shop, include_content=False)
    with pytest.raises(TraceImportError, match="set to leave content out"):
        read_all(path)


def test_ids_not_in_hex_and_files_not_otlp_are_refused(tmp_path: Path, traces: Path) -> None:
    documents = load(traces)
    next(all_spans(documents))["traceId"] = "q83vEjRWeJA="  # the proto3 mapping's base64
    with pytest.raises(TraceImportError, match=r"line 1: traceId 'q83vEjRWeJA=' is not 32 hex"):
        read_all(write(tmp_path / "b64.jsonl", documents))
    with pytest.raises(TraceImportError, match=r"line 2: not an OTLP JSON trace document"):
        read_all(write(tmp_path / "mixed.jsonl", [load(traces)[0], {"resourceLogs": []}]))
    with pytest.raises(TraceImportError, match="bytes exceeds the 100-byte limit"):
        read_all(traces, limit=100)
    duplicated = load(traces)
    with pytest.raises(TraceImportError, match="the span appears twice"):
        read_all(write(tmp_path / "twice.jsonl", duplicated + duplicated))


def legacy_trace(path: Path, as_attribute: bool) -> Path:
    """A trace in the older event spelling (semconv 1.27 to 1.36), made with the
    OpenTelemetry SDK and its real exporter: the messages as span events, or as pydantic-ai's
    first format did, as one JSON `events` attribute."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("gen_ai.system.message", {"content": "You are the shop's support agent."}),
        ("gen_ai.user.message", {"content": "Where is my order 100?"}),
    ]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "order_status", "arguments": '{"order_id": "A-100"}'},
    }
    answers = [
        ("gen_ai.choice", {"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}),
        ("gen_ai.choice", {"index": 0, "message": {"role": "assistant", "content": "Shipped."}}),
    ]
    with OtlpFileReceiver(path) as receiver:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(receiver.traces_url)))
        tracer = provider.get_tracer("an-older-instrumentation")
        with tracer.start_as_current_span("agent run") as run:
            run.set_attributes(
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
            )
            sent = list(events)
            for step, answer in enumerate(answers):
                with tracer.start_as_current_span("chat gpt-4o") as chat:
                    chat.set_attributes(
                        {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.request.model": "gpt-4o",
                            "gen_ai.usage.input_tokens": 50 + step,
                        }
                    )
                    shown = [*sent, answer]
                    if as_attribute:
                        listed = [{"event.name": name, **body} for name, body in shown]
                        chat.set_attribute("events", json.dumps(listed))
                    else:
                        for name, body in shown:
                            flat = {
                                k: v if isinstance(v, str | int) else json.dumps(v)
                                for k, v in body.items()
                            }
                            chat.add_event(name, flat)
                if step == 0:
                    with tracer.start_as_current_span("running tool") as tool:
                        tool.set_attributes(
                            {
                                "gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.call.id": "call_1",
                                "tool_response": "shipped on Monday",
                            }
                        )
                    sent += [
                        ("gen_ai.assistant.message", {"tool_calls": [call]}),
                        ("gen_ai.tool.message", {"id": "call_1", "content": "shipped on Monday"}),
                    ]
        provider.shutdown()
    return path


@pytest.mark.parametrize("as_attribute", [False, True], ids=["span-events", "events-attribute"])
def test_the_older_event_spelling_is_read(tmp_path: Path, as_attribute: bool) -> None:
    (conversation,) = read_all(legacy_trace(tmp_path / "legacy.jsonl", as_attribute))
    assert conversation.source == EVENTS_VERSION
    (turn,) = conversation.turns
    assert turn.user_input == "Where is my order 100?"
    (call,) = conversation.calls()
    assert (call.id, call.name, call.arguments, call.result) == (
        "call_1",
        "order_status",
        {"order_id": "A-100"},
        "shipped on Monday",
    )
    assert [s.text for s in turn.steps] == [None, "Shipped."]
    assert [s.input_tokens for s in turn.steps] == [50, 51]
    assert conversation.instructions == {"shop": "You are the shop's support agent."}
    assert conversation.model_name == "gpt-4o"


def test_without_agent_spans_new_user_text_starts_a_turn(tmp_path: Path, traces: Path) -> None:
    (expected,) = read_all(traces)
    documents = load(traces)
    for span in all_spans(documents):
        if attribute(span, "gen_ai.operation.name") == "invoke_agent":
            set_attribute(span, "gen_ai.operation.name", None)
    (conversation,) = read_all(write(tmp_path / "no-agents.jsonl", documents))
    assert script(conversation) == script(expected)


def test_hostile_nesting_and_values_are_refused_not_raised(tmp_path: Path, traces: Path) -> None:
    def deep(spans: list[dict[str, Any]]) -> None:
        set_attribute(chats(spans)[0], "gen_ai.input.messages", "[" * 100_000)

    assert "gen_ai.input.messages is not JSON" in edited_refusal(tmp_path, traces, deep)

    def not_an_integer(spans: list[dict[str, Any]]) -> None:
        chats(spans)[0]["attributes"].append({"key": "n", "value": {"intValue": "many"}})

    assert "an intValue is no integer" in edited_refusal(tmp_path, traces, not_an_integer)

    documents = load(traces)
    next(all_spans(documents))["attributes"].append({"key": "deep", "value": {"boolValue": 1}})
    path = write(tmp_path / "deep.jsonl", documents)
    deep_value = '{"arrayValue": {"values": [' * 50_000 + "{}" + "]}}" * 50_000
    path.write_text(path.read_text().replace('{"boolValue": 1}', deep_value), encoding="utf-8")
    with pytest.raises(TraceImportError, match="too deeply"):
        read_all(path)


def test_a_truncated_last_line_is_passed_over_and_the_format_is_told_by_its_head(
    tmp_path: Path, traces: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert sniff(traces.read_bytes()[:65536])
    assert not sniff(b'[{"parts": []}]') and not sniff(b'{"format": "zeroclaw-openai-agents"}')
    data = traces.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data + data.splitlines()[0][:300])  # an exporter stopped mid-line
    (expected,) = read_all(traces)
    (conversation,) = read_all(cut)
    assert script(conversation) == script(expected)
    assert "cut.jsonl: line" in caplog.text and "a truncated last line" in caplog.text
    cut.write_bytes(data.splitlines()[0][:300] + b"\n" + data)  # not the last: refused
    with pytest.raises(TraceImportError, match=r"cut\.jsonl: line 1: not an OTLP JSON"):
        read_all(cut)


DELEGATION = Path(__file__).parent.parent / "examples" / "pydantic_ai_delegation"


def test_a_delegating_agent_is_one_turn_each_step_naming_its_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pydantic-ai's flight-booking delegation (a tool running another agent): the
    delegate's run nests in the booking agent's turn, and the import replays green."""
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    source = (DELEGATION / "flight_booking.py").read_text(encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = write_module(tmp_path, source, prefix="flight_booking")
    flights = importlib.import_module(module)
    search = {"origin": "ANC", "destination": "SFO", "date": "2025-01-10"}
    path = tmp_path / "delegation.jsonl"
    with OtlpFileReceiver(path) as receiver:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(receiver.traces_url)))
        settings = InstrumentationSettings(tracer_provider=provider)
        flights.booking_agent.instrument = settings
        flights.search_agent.instrument = settings
        answers = [
            tool_reply([("call_search", "search_flights", search)]),
            tool_reply([("call_find", "find_flights", search)]),
            text_reply("ZC101 $220; ZC205 $310"),
            text_reply("Two flights: ZC101 at $220 and ZC205 at $310."),
        ]
        with OpenAIServer(answers) as server:
            model = OpenAIChatModel(
                "m", provider=OpenAIProvider(base_url=server.base_url, api_key="sk-loopback")
            )
            with (
                flights.booking_agent.override(model=model),
                flights.search_agent.override(model=model),
            ):
                flights.booking_agent.run_sync("Which flights go from ANC to SFO on 2025-01-10?")
            server.assert_drained()
        provider.shutdown()

    (conversation,) = read_all(path)
    (turn,) = conversation.turns
    assert turn.user_input == "Which flights go from ANC to SFO on 2025-01-10?"
    assert [s.agent for s in turn.steps] == ["booking", "flight_search", "flight_search", "booking"]
    assert conversation.agents == ("booking", "flight_search")
    assert conversation.final_agent == "booking"
    assert [(c.name, c.result) for c in conversation.calls()] == [
        ("search_flights", "ZC101 $220; ZC205 $310"),
        ("find_flights", "ZC101 $220; ZC205 $310"),
    ]
    assert set(conversation.instructions) == {"booking", "flight_search"}
    spans = list(all_spans(load(path)))
    runs = {attribute(s, "gen_ai.agent.name"): s for s in spans if s["name"].startswith("invoke")}
    assert conversation.trace_id == attribute(runs["booking"], "gen_ai.conversation.id")
    # The delegate's run says a conversation id of its own; its spans first in the file
    # change nothing: the conversation is the one the booking agent's run started.
    documents = one_span_a_line(load(path))
    documents.sort(key=lambda d: attribute(next(all_spans([d])), "gen_ai.agent.name") == "booking")
    (reordered,) = read_all(write(tmp_path / "delegate-first.jsonl", documents))
    assert reordered.trace_id == conversation.trace_id
    assert script(reordered) == script(conversation)

    case = replay(tmp_path / "green", conversation, module, "booking_agent", context=None)
    assert case.error is None, case.error
    assert case.passed, (failing(case), dumped(conversation))
    broken = write_module(tmp_path, source.replace('"fare": "310"', '"fare": "999"'), "broken")
    case = replay(tmp_path / "red", conversation, broken, "booking_agent", context=None)
    assert not case.passed
    assert any(check.startswith("tool_results_contain") for check in failing(case))


def test_a_run_the_provider_failed_is_read_up_to_the_failure(tmp_path: Path, shop: str) -> None:
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    path = tmp_path / "failed.jsonl"
    with OtlpFileReceiver(path) as receiver:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(receiver.traces_url)))
        settings = InstrumentationSettings(tracer_provider=provider)
        agent = importlib.import_module(shop).build_agent([Instrumentation(settings=settings)])
        answers = [
            tool_reply([("call_1", "order_status", {"order_id": "A-100"})]),
            status(400, {"error": {"message": "context length exceeded"}}),
        ]
        with OpenAIServer(answers) as server:
            model = OpenAIChatModel(
                "m", provider=OpenAIProvider(base_url=server.base_url, api_key="sk-loopback")
            )
            deps = importlib.import_module(shop).ShopDeps(customer="Grace")
            with pytest.raises(ModelHTTPError):
                agent.run_sync(PROMPTS[0], deps=deps, model=model)
        provider.shutdown()
    (conversation,) = read_all(path)
    assert conversation.failed
    ((step,),) = [t.steps for t in conversation.turns]
    assert [(c.name, c.result) for c in step.calls] == [
        ("order_status", "order A-100 for Grace: shipped on Monday")
    ]

    documents = load(path)
    for span in all_spans(documents):  # the first answer lost too: nothing left to script
        if attribute(span, "gen_ai.operation.name") == "chat":
            span["status"] = {"code": "STATUS_CODE_ERROR"}
            set_attribute(span, "gen_ai.output.messages", None)
    with pytest.raises(TraceImportError, match="first model call failed"):
        read_all(write(tmp_path / "nothing.jsonl", documents))


def test_a_user_message_of_several_text_parts_keeps_their_order(
    tmp_path: Path, traces: Path
) -> None:
    documents = load(traces)
    first = chats(sorted(all_spans(documents), key=lambda s: int(s["startTimeUnixNano"])))[0]
    parts = [{"type": "text", "content": "one"}, {"type": "text", "content": "two"}]
    sent = [{"role": "user", "parts": parts[:1]}, {"role": "user", "parts": parts}]
    set_attribute(first, "gen_ai.input.messages", json.dumps(sent))
    (conversation,) = read_all(write(tmp_path / "parts.jsonl", documents))
    assert conversation.turns[0].user_input == "one\none\ntwo"


def test_the_imported_case_s_grades_go_back_beside_its_trace(
    run_cli: Cli, tmp_path: Path, shop: str, traces: Path
) -> None:
    documents = load(traces)
    for span in all_spans(documents):  # one conversation a trace: its id is an OTLP trace id
        set_attribute(span, "gen_ai.conversation.id", None)
    first, _ = read_all(write(tmp_path / "apart.jsonl", documents))
    data = fixture_of(first)
    data["origin"] = {"source": first.source, "trace_id": first.trace_id}
    write_suite(tmp_path / "evals" / "regression", {"imported.json": data})
    result = run_cli(
        "eval",
        "run",
        "--suite",
        "evals/regression",
        "--agent",
        f"pydantic-ai:{shop}:build_agent",
        "--otel-events",
        "events.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    (line,) = (tmp_path / "events.jsonl").read_text().splitlines()
    events = [
        r
        for rl in json.loads(line)["resourceLogs"]
        for sl in rl["scopeLogs"]
        for r in sl["logRecords"]
    ]
    assert {e["traceId"] for e in events} == {first.trace_id}
    assert {e["eventName"] for e in events} == {"gen_ai.evaluation.result"}
    trace_ids = {s["traceId"] for s in all_spans(load(traces))}
    assert first.trace_id in trace_ids
