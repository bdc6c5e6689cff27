"""The fixture writer: turns and steps as the conversation had them, agents named only
where there were several, call ids unique over the fixture, `next_turn_agent` where a turn
began where the last ended, `origin`, ids derived from the trace."""

from __future__ import annotations

from harness.tracing.conversation import (
    ImportedCall,
    ImportedConversation,
    ImportedStep,
    ImportedTurn,
)
from harness.tracing.fixture_writer import derived_id, fixture_of, slug


def conversation(agents: tuple[str, ...], starts: tuple[str | None, ...]) -> ImportedConversation:
    call = ImportedCall("call_1", "lookup", {"id": 1}, result="ok")
    turn = ImportedTurn(
        "q",
        (
            ImportedStep("s", "a", calls=(call,), input_tokens=5),
            ImportedStep("s", "a", text="done"),
        ),
    )
    return ImportedConversation(
        "src/1",
        "trace_0123456789abcdef",
        "Help Desk!",
        (turn, turn),
        "gpt-x",
        agents,
        starts=starts,
    )


def test_one_agent_writes_no_agent_and_call_ids_stay_unique() -> None:
    fixture = fixture_of(
        conversation(("a",), ("a", "a")), case_id="c", expects={"tools_used": ["lookup"]}
    )
    ids = [s["response"]["tool_calls"][0]["id"] for t in fixture["turns"] for s in t["steps"][:1]]
    assert ids == ["call_1", "call_1_2"]
    assert all("agent" not in s for t in fixture["turns"] for s in t["steps"])
    assert fixture["turns"][0]["steps"][0]["response"]["input_tokens"] == 5
    assert fixture["model_name"] == "gpt-x" and "next_turn_agent" not in fixture
    assert fixture["origin"] == {"source": "src/1", "trace_id": "trace_0123456789abcdef"}
    assert fixture["expects"] == {"tools_used": ["lookup"]}


def test_several_agents_name_theirs_and_a_later_start_elsewhere_continues_at_last() -> None:
    fixture = fixture_of(conversation(("a", "b"), ("a", "b")), case_id="c", model_name="m")
    assert fixture["turns"][0]["steps"][0]["agent"] == "a"
    assert fixture["next_turn_agent"] == "last"
    assert fixture["model_name"] == "m" and "expects" not in fixture


def test_ids_are_derived_from_the_name_and_the_trace() -> None:
    assert derived_id(conversation(("a",), ())) == "help-desk-01234567"
    assert slug("  Ünïcode / Name ") == "n-code-name"
    assert slug("!!!") == "imported"
