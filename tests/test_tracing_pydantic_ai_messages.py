"""`harness.tracing.pydantic_ai_messages`: pydantic-ai's logged message history
(`all_messages_json()`), from a real run against the loopback provider, read into the
conversation every source produces; replayed through the same agent, and refused where it
cannot be read, naming the message and part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _imported import PROMPTS, dumped, failing, replay, run_shop, shop_module

from harness.tracing.conversation import ImportedConversation, TraceImportError
from harness.tracing.pydantic_ai_messages import VERSION, read, sniff

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

LIMIT = 1 << 20


def read_all(path: Path, limit: int = LIMIT) -> list[ImportedConversation]:
    return list(read(path, limit_bytes=limit))


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[Any]]:
    """The shop agent's module and its two real runs' results."""
    module = shop_module(tmp_path, monkeypatch)
    return module, run_shop(module)


def test_a_logged_multi_turn_history_is_read_in_order(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    _, (_, second) = history
    logged = tmp_path / "history.json"
    logged.write_bytes(second.all_messages_json())
    (conversation,) = read_all(logged)
    assert conversation.source == VERSION
    assert conversation.trace_id == second.all_messages()[0].conversation_id
    assert [t.user_input for t in conversation.turns] == list(PROMPTS)
    calls = [(c.id, c.name, c.arguments, c.failed) for c in conversation.calls()]
    assert calls == [
        ("call_1", "order_status", {"order_id": "100"}, True),
        ("call_2", "order_status", {"order_id": "A-100"}, False),
        ("call_3", "cancel_order", {"order_id": "A-200"}, False),
    ]
    retried, found, cancelled = conversation.calls()
    assert retried.result == "there is no order 100: order ids look like A-100"
    assert found.result == "order A-100 for Grace: shipped on Monday"
    assert cancelled.result == "order A-200 cancelled"
    steps = [s for t in conversation.turns for s in t.steps]
    assert [s.text for s in steps] == [
        None,
        None,
        "Your order A-100 shipped on Monday.",
        None,
        "Order A-200 is cancelled.",
    ]
    assert [(s.input_tokens, s.output_tokens) for s in steps] == [
        (120, 5),
        (160, 5),
        (200, 9),
        (230, 5),
        (260, 7),
    ]
    assert steps[0].where.endswith(": $[1]")
    assert conversation.model_name == "loopback-model"


def test_the_imported_history_replays_green_and_fails_on_the_broken_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, history: tuple[str, list[Any]]
) -> None:
    module, (_, second) = history
    logged = tmp_path / "history.json"
    logged.write_bytes(second.all_messages_json())
    (conversation,) = read_all(logged)
    case = replay(tmp_path / "green", conversation, module)
    assert case.error is None, case.error
    assert case.passed, (failing(case), dumped(conversation))
    assert case.record is not None
    assert [c.success for c in case.record.calls] == [False, True, True]

    broken = shop_module(tmp_path, monkeypatch, broken=True)
    case = replay(tmp_path / "red", conversation, broken)
    assert case.error is None, case.error
    (check, detail), *_ = failing(case).items()
    assert check.startswith('tool_results_contain("order_status"')
    assert "lost in transit" in detail


def test_json_lines_of_histories_are_one_conversation_each(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    _, (first, second) = history
    logged = tmp_path / "runs.jsonl"
    logged.write_bytes(first.all_messages_json() + b"\n\n" + second.new_messages_json() + b"\n")
    one, two = read_all(logged)
    assert [t.user_input for t in one.turns] == [PROMPTS[0]]
    assert [t.user_input for t in two.turns] == [PROMPTS[1]]
    assert (one.name, two.name) == ("runs-1", "runs-3")
    assert [c.id for c in two.calls()] == ["call_3"]


def edited(tmp_path: Path, history: list[Any], name: str = "edited.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(history), encoding="utf-8")
    return path


def logged(history: tuple[str, list[Any]]) -> list[Any]:
    loaded: list[Any] = json.loads(history[1][1].all_messages_json())
    return loaded


def test_the_older_retry_prompt_part_is_a_failed_call(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    messages = logged(history)
    retried = messages[2]["parts"][0]
    messages[2]["parts"][0] = {
        "part_kind": "retry-prompt",
        "tool_name": retried["tool_name"],
        "tool_call_id": retried["tool_call_id"],
        "content": "order ids look like A-100",
    }
    (conversation,) = read_all(edited(tmp_path, messages))
    first = conversation.calls()[0]
    assert (first.failed, first.result) == (True, "order ids look like A-100")


def refusal(tmp_path: Path, messages: Any) -> str:
    with pytest.raises(TraceImportError) as raised:
        read_all(edited(tmp_path, messages))
    return str(raised.value)


@pytest.mark.parametrize(
    ("at", "part", "says"),
    [
        (1, {"part_kind": "builtin-tool-call", "tool_name": "web_search"}, "built-in tool call"),
        (1, {"part_kind": "file", "content": {}}, "a file the model generated"),
        (1, {"part_kind": "sparkle"}, "unknown response part_kind 'sparkle'"),
        (0, {"part_kind": "sparkle"}, "unknown request part_kind 'sparkle'"),
        (1, {"part_kind": "tool-call", "tool_name": 7, "tool_call_id": "x"}, "`$[1].parts[0]"),
        (1, {"part_kind": "tool-call", "tool_name": "t", "tool_call_id": "x", "args": "{"}, "args"),
        (0, {"part_kind": "user-prompt", "content": [{"kind": "image-url"}]}, "images"),
        (
            1,
            {"part_kind": "tool-call", "tool_name": "t", "tool_call_id": "x", "args": "[" * 99_999},
            "args: not JSON",
        ),
    ],
)
def test_parts_it_cannot_replay_are_refused_naming_message_and_part(
    tmp_path: Path, history: tuple[str, list[Any]], at: int, part: dict[str, Any], says: str
) -> None:
    messages = logged(history)
    messages[at]["parts"][0] = part
    message = refusal(tmp_path, messages)
    assert f"edited.json: $[{at}].parts[0]" in message
    assert says in message


def test_histories_it_cannot_turn_into_turns_are_refused(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    messages = logged(history)
    assert "$[0]: a model response before any user prompt" in refusal(tmp_path, messages[1:])
    assert "$[6]: the user prompt has no model response after it" in refusal(tmp_path, messages[:7])
    assert "$[3]: Expected `str`" in refusal(tmp_path, [*messages[:3], {"kind": 3, "parts": []}])
    assert "no user prompt in the history" in refusal(tmp_path, [])


def test_unreadable_files_are_refused_naming_the_file_and_line(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(history[1][0].all_messages_json() + b'\n{"not": "a list"}\n')
    with pytest.raises(TraceImportError, match=r"bad\.jsonl: line 2: not a JSON array"):
        read_all(path)
    path.write_text("[]" + " " * 100, encoding="utf-8")
    with pytest.raises(TraceImportError, match=r"bad\.jsonl: 102 bytes exceeds the 50-byte"):
        read_all(path, limit=50)
    with pytest.raises(TraceImportError, match=r"missing\.json"):
        read_all(tmp_path / "missing.json")


def test_a_truncated_last_line_is_passed_over_and_the_format_is_told_by_its_head(
    tmp_path: Path, history: tuple[str, list[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    _, (first, second) = history
    assert sniff(second.all_messages_json()[:65536])
    assert not sniff(b'{"resourceSpans": []}') and not sniff(b"[1, 2]")
    path = tmp_path / "runs.jsonl"
    path.write_bytes(first.all_messages_json() + b"\n" + second.all_messages_json()[:200])
    (conversation,) = read_all(path)
    assert [t.user_input for t in conversation.turns] == [PROMPTS[0]]
    assert "runs.jsonl: line 2: a truncated last line" in caplog.text


def test_a_history_nested_too_deeply_is_refused_not_passed_over(
    tmp_path: Path, history: tuple[str, list[Any]]
) -> None:
    messages = logged(history)
    messages[2]["parts"][0]["content"] = "DEEP"
    path = edited(tmp_path, messages)
    path.write_text(path.read_text().replace('"DEEP"', "[" * 5000 + "]" * 5000))
    with pytest.raises(TraceImportError, match="nested too deeply"):
        read_all(path)
