"""Redaction: each built-in kind replaced, and what only looks like one left alone; the same
value the same placeholder everywhere (JSON arguments included); user patterns in RE2
(linear time on hostile text); a report that counts and never shows a value."""

from __future__ import annotations

import time

import pytest

from harness.errors import UsageError
from harness.tracing.conversation import (
    ImportedCall,
    ImportedConversation,
    ImportedStep,
    ImportedTurn,
)
from harness.tracing.redaction import Redactor, luhn


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to Jane.Doe+desk@mail.example.co.uk today", "EMAIL"),
        ("call +44 20 7946 0958 now", "PHONE"),
        ("call (415) 555-0100 now", "PHONE"),
        ("card 4111 1111 1111 1111 ok", "CARD"),
        ("card 5555-5555-5555-4444 ok", "CARD"),
        ("key sk-proj-abcdefghijklmnopqrstuvwx used", "API_KEY"),
        ("Authorization: Bearer abcdef0123456789.xyz", "BEARER"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AWS_KEY"),
        ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789 here", "GITHUB_TOKEN"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N here", "JWT"),
    ],
)
def test_each_built_in_kind_is_replaced_by_its_placeholder(text: str, kind: str) -> None:
    redactor = Redactor.of()
    redacted = redactor.text(text)
    assert f"<{kind}_1>" in redacted, redacted
    assert redactor.counts == {kind: 1}
    assert redactor.found_in(text) == [kind]
    assert redactor.found_in(redacted) == []


@pytest.mark.parametrize(
    "text",
    [
        "due 2026-04-15 (120.00 EUR)",  # a date and an amount are no phone number
        "card 4111 1111 1111 1112",  # fails the Luhn check
        "invoice INV-101, order 12345678",
        "sk-short",
    ],
)
def test_what_only_looks_like_personal_data_is_left_alone(text: str) -> None:
    redactor = Redactor.of()
    assert redactor.text(text) == text and not redactor.counts


def test_luhn() -> None:
    assert luhn("4111111111111111") and luhn("79927398713") and not luhn("79927398710")


def test_one_value_is_one_placeholder_everywhere_however_it_is_spelled() -> None:
    redactor = Redactor.of()
    card = ImportedCall(
        "c1",
        "charge",
        {"card": "4111111111111111", "also": [4111111111111111], "mail": "JANE@example.com"},
        result="charged card 4111-1111-1111-1111, receipt to jane@example.com",
    )
    conversation = ImportedConversation(
        "test/1",
        "t1",
        "desk",
        (
            ImportedTurn(
                "pay with 4111 1111 1111 1111, mail jane@example.com or bob@example.com",
                (
                    ImportedStep("s1", calls=(card,)),
                    ImportedStep("s2", text="done: jane@example.com"),
                ),
            ),
        ),
    )
    redacted = redactor.conversation(conversation)
    turn = redacted.turns[0]
    assert turn.user_input == "pay with <CARD_1>, mail <EMAIL_1> or <EMAIL_2>"
    call = turn.steps[0].calls[0]
    assert call.arguments == {"card": "<CARD_1>", "also": ["<CARD_1>"], "mail": "<EMAIL_1>"}
    assert call.result == "charged card <CARD_1>, receipt to <EMAIL_1>"
    assert turn.steps[1].text == "done: <EMAIL_1>"
    report = redactor.report()
    assert report == "redaction replaced: CARD 4x (1 distinct), EMAIL 5x (2 distinct)"
    assert "example.com" not in report and "4111" not in report


def test_user_patterns_are_re2_and_hostile_text_takes_linear_time() -> None:
    redactor = Redactor.of(["(a+)+b", r"ORDER-\d{4}"], built_in=False)
    assert redactor.text("see ORDER-1234 and ORDER-1234") == "see <REDACTED_1> and <REDACTED_1>"
    hostile = "a" * 50_000 + "c"
    started = time.perf_counter()
    assert redactor.text(hostile) == hostile
    assert time.perf_counter() - started < 2  # a backtracking engine would take ages
    with pytest.raises(UsageError, match="no RE2 pattern"):
        Redactor.of(["(?<=x)y"])


def test_a_grouped_pattern_replaces_only_its_group() -> None:
    assert Redactor.of().text("bearer abcdefghijklmnop") == "bearer <BEARER_1>"


def test_found_in_sees_a_value_escaped_as_json_text() -> None:
    redactor = Redactor.of(['x"y'], built_in=False)
    redactor.text('a x"y b')
    assert redactor.found_in('{"k": "x\\"y"}') == ["REDACTED"]
