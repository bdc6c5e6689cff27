"""Suggested expectations: what a conversation proves, by family; the short distinctive
phrase of a text; `--expect`'s families; a grade traced back to its family."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.tracing.conversation import (
    ImportedCall,
    ImportedConversation,
    ImportedStep,
    ImportedTurn,
)
from harness.tracing.suggestions import (
    FAMILIES,
    expects_of,
    family_of,
    parse_families,
    phrase,
    suggest,
)

LOOKUP = ImportedCall(
    "c2", "lookup", {"invoice_id": "INV-1", "verbose": True}, result="INV-1: paid"
)
HANDOFF = ImportedCall("c1", "transfer_to_billing", {}, kind="handoff", target="billing")
DESK = ImportedConversation(
    "test/1",
    "t1",
    "desk",
    (
        ImportedTurn(
            "Is INV-1 paid?",
            (
                ImportedStep("s1", "triage", calls=(HANDOFF,)),
                ImportedStep("s2", "billing", calls=(LOOKUP,)),
                ImportedStep("s3", "billing", text="Yes. Invoice INV-1 was paid on 2026-03-02."),
            ),
        ),
    ),
    agents=("triage", "billing"),
    final_agent="billing",
    handoffs=(("triage", "billing"),),
    guardrails_tripped=("no_pii",),
)


def test_every_family_the_conversation_proves_is_suggested() -> None:
    found = suggest(DESK)
    assert list(found) == list(FAMILIES)
    assert found["tools"] == {"tools_used": ["lookup"]}
    assert found["trajectory"]["trajectory"]["calls"] == [
        {
            "tool": "lookup",
            "arguments": {"invoice_id": "INV-1", "verbose": True},
            "agent": "billing",
        }
    ]
    assert found["args"]["tool_arguments_contain"] == [
        {"tool": "lookup", "needle": '"invoice_id":"INV-1"'},
        {"tool": "lookup", "needle": '"verbose":true'},
    ]
    assert found["results"] == {
        "tool_results_contain": [{"tool": "lookup", "needle": "INV-1: paid"}]
    }
    assert found["handoffs"] == {"handoffs": ["billing"]}
    assert found["final_agent"] == {"final_agent": "billing"}
    answer = "Yes. Invoice INV-1 was paid on 2026-03-02."
    assert found["response"] == {"response_contains": [answer]}
    assert found["guardrails"] == {"guardrails_tripped": ["no_pii"]}
    assert expects_of(found, ("handoffs", "tools")) == {
        "handoffs": ["billing"],
        "tools_used": ["lookup"],
    }


def test_a_text_only_conversation_suggests_its_answer_only() -> None:
    plain = ImportedConversation(
        "test/1", "t", "x", (ImportedTurn("hi", (ImportedStep("s", text="Hello there!"),)),)
    )
    assert suggest(plain) == {"response": {"response_contains": ["Hello there!"]}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Billing says: invoice INV-101: open, due 2026-04-15 (120.00 EUR)",
            "due 2026-04-15 (120.00 EUR)",
        ),
        ("ok", "ok"),
        ("   ", None),
        ("a " * 100, "a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a"),
    ],
)
def test_phrase_is_a_short_distinctive_substring(text: str, expected: str | None) -> None:
    found = phrase(text)
    assert found == expected
    assert found is None or (found in text and len(found) <= 60)


def test_families_are_parsed_strictly() -> None:
    assert parse_families(None) == ()
    assert parse_families("tools, handoffs,tools") == ("tools", "handoffs")
    assert parse_families("all") == FAMILIES
    with pytest.raises(UsageError, match="unknown family tool "):
        parse_families("tool")


def test_a_grade_is_traced_back_to_its_family() -> None:
    assert family_of("$.expects.tool_results_contain[0]") == "results"
    assert family_of("$.expects.trajectory.calls[2]") == "trajectory"
    assert family_of("$.expects.judge[0]") is None
    assert family_of("$.turns[0]") is None
