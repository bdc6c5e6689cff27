"""`harness.io.text`: the one place untrusted text is made safe: clean (no lone
surrogate, control, escape sequence or bidirectional override; still encodable), inert (no
line GitHub's runner acts on, in plain text, markup and JSON alike, with the parsed value of
markup and JSON unchanged), and fenced between stop-commands."""

from __future__ import annotations

import html
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_reporters_github import acted_on, runner_commands

from harness.io import text

NASTY = [
    "\x1b[2J\x1b[H clear screen",
    "\x1b]0;new title\x07 title change",
    "\x9b31m C1 CSI",
    "nul \x00 del \x7f bell \x07 backspace \x08",
    "bidi \u202eevil\u202c and \u2066isolate\u2069 and \u200f mark",
    "invisible zero\u200bwidth, word\u2060joiner, \ufeffBOM",
    "lone \ud800 and \udfff surrogates",
    "separators \u2028 \u2029 \x85 \x0b \x0c \x1c",
    "non-characters \ufffe \uffff",
    "cr\ronly and crlf\r\nand lf\nand tab\t",
]
ATTACKS = [
    "::error::plain",
    "  ::warning file=x::indented",
    "\u00a0::error::after a no-break space",
    "\u3000::error::after an ideographic space",
    "\x85::error::after NEL",
    "\u2028::error::after a line separator",
    "text ##[error]legacy anywhere",
    "##[stop-commands]stopper",
    "ok\r::error::after a bare CR",
    "ok\r\n::error::after CRLF",
]
# What may not remain: controls (but LF and tab in lines), lone surrogates, bidi formatting.
BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
HIDING = set("\u200b\u2060\u2061\u2062\u2063\u2064\ufeff")


def unsafe_left(shown: str, keep: str = "") -> list[str]:
    return [
        c
        for c in shown
        if c not in keep
        and (
            unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")
            or c in BIDI | HIDING
            or c in "\ufffe\uffff"
        )
    ]


@pytest.mark.parametrize("nasty", NASTY)
def test_clean_leaves_nothing_that_acts_and_is_encodable(nasty: str) -> None:
    one = text.clean(nasty)
    lines = text.clean_lines(nasty)
    assert unsafe_left(one) == []
    assert unsafe_left(lines, keep="\n\t") == []
    one.encode("utf-8")  # strict: a lone surrogate would raise
    lines.encode("utf-8")
    assert text.clean(one) == one and text.clean_lines(lines) == lines  # idempotent


def test_what_clean_shows_instead() -> None:
    assert text.clean("a\x1b[31mb") == "a\\u001b[31mb"
    assert text.clean("id\nnext") == "id\\u000anext"
    assert text.clean("\u202eabc") == "\\u202eabc"
    assert text.clean("x\ud800y\uffff") == "x\ufffdy\ufffd"
    assert text.clean_lines("a\r\nb\rc\nd\te") == "a\nb\\u000dc\nd\te"
    legal = "plain ASCII, 日本語, ✓, \U0001f600, \u00a0, \ue000, 👨\u200d👩, \u200c"
    assert text.clean(legal) == legal == text.clean_lines(legal)
    assert text.clean("tab\there") == "tab\\u0009here"


def test_clip_one_line_headline_and_brief() -> None:
    assert text.clip("abcdef", 4) == "abc…" and text.clip("abc", 4) == "abc"
    assert text.one_line("a\n  b\r\n\tc\x1b", 100) == "a b c\\u001b"
    assert text.one_line("x" * 200, 120) == "x" * 119 + "…"
    assert text.headline("\n  \nfirst line\nsecond", 5) == "firs…"
    assert text.headline("") == ""
    assert text.brief(("check: " + "y" * 100, " (+2 more)"), 40) == (
        "check: " + "y" * 22 + "… (+2 more)"
    )
    assert len(text.brief(("z" * 100, " (+2 more)"), 40)) == 40
    assert text.brief(("a\nb", ""), 10, fold=False) == "a\nb"


@pytest.mark.parametrize("attack", ATTACKS)
def test_inert_plain_text_holds_no_runner_command(attack: str) -> None:
    assert acted_on(attack), "the attack must be one the runner acts on"
    shown = text.inert(text.clean_lines(f"before\n{attack}\nafter"))
    assert runner_commands(shown) == []
    assert "##[" not in shown


@pytest.mark.parametrize("attack", ATTACKS)
def test_inert_markup_keeps_the_parsed_text(attack: str) -> None:
    cleaned = text.clean_lines(attack)
    document = text.inert_markup(f"<a t='{html.escape(cleaned)}'>\n{html.escape(cleaned)}\n</a>")
    assert runner_commands(document) == []
    parsed = ET.fromstring(document)
    assert parsed.text == f"\n{cleaned}\n"
    assert html.unescape(text.inert_markup(html.escape(cleaned))) == cleaned


@pytest.mark.parametrize("value", ATTACKS + NASTY)
def test_json_safe_keeps_the_parsed_value(value: str) -> None:
    replaced = re.sub("[\ud800-\udfff]", "\ufffd", value)  # raw, they cannot be UTF-8
    for encoded, expected in (
        (json.dumps({value: [value]}, ensure_ascii=False), {replaced: [replaced]}),
        (json.dumps({"a": value}, ensure_ascii=False, indent=2), {"a": replaced}),
        (json.dumps({value: value}), {value: value}),  # escaped already: exactly kept
    ):
        safe = text.json_safe(encoded)
        assert not acted_on(safe)
        assert "##[" not in safe
        assert unsafe_left(safe, keep="\n") == []
        safe.encode("utf-8")
        assert json.loads(safe) == expected


def test_without_surrogates_walks_keys_and_values() -> None:
    value = {"k\ud800": ["v\udc00", {"n": 1, "t": ("\ud83d",)}], "f": 1.5, "b": None}
    assert text.without_surrogates(value) == {
        "k\ufffd": ["v\ufffd", {"n": 1, "t": ["\ufffd"]}],
        "f": 1.5,
        "b": None,
    }


def test_stop_commands_fences_everything_with_a_fresh_random_token() -> None:
    forged = "\n".join(ATTACKS)
    tokens = {text.command_token() for _ in range(20)}
    assert len(tokens) == 20 and all(re.fullmatch("[0-9a-f]{32}", t) for t in tokens)
    token = tokens.pop()
    fenced = text.stop_commands(forged, token)
    assert fenced.startswith(f"::stop-commands::{token}\n")
    assert fenced.endswith(f"\n::{token}::\n")
    assert runner_commands(fenced + "::error::after it") != []  # processing resumed
    assert [c.message for c in runner_commands(fenced + "::error::after it")] == ["after it"]


# --- encoded_json: a report's text as JSON, whatever an agent put in it -------------------


def test_a_report_no_encoder_can_write_is_written_with_each_odd_value_by_its_kind() -> None:
    # The boundary checks a request as it is sent; the record holds what was sent, and an
    # agent can change it afterwards: a key that is no text, an object, a list inside
    # itself failed every report writer (a traceback, no report at all).
    looped: list[object] = ["x"]
    looped.append(looped)
    sent = {True: 1, None: 2, (1, 2): 3, 1.5: 4, "o": object(), "s": "a\ud800", "l": looped}
    assert json.loads(text.encoded_json({"arguments": sent})) == {
        "arguments": {
            "true": 1,
            "null": 2,
            "<tuple>": 3,
            "1.5": 4,
            "o": "<object>",
            "s": "a\ufffd",
            "l": ["x", "<cycle>"],
        }
    }


def test_what_the_fallback_writes_of_a_real_report_is_what_its_encoder_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Structs as their fields by their JSON names, defaults left out where the struct's
    # own encoding leaves them out, a tagged struct with its tag, shared values twice.
    import msgspec
    from conftest import FAITHFUL_LOOP, echo_fixture, write_module, write_suite

    from harness import run_suite
    from harness.fixtures.schema import TextResponse, ToolCallsResponse

    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{write_module(tmp_path, FAITHFUL_LOOP)}:factory"
    suite = write_suite(tmp_path / "suite", {"a.json": echo_fixture("echo-a")})
    report = run_suite(suite, agent=spec)
    tagged = [TextResponse(content="hi"), ToolCallsResponse(tool_calls=[])]
    for value in (report.cases[0], tagged):
        plain = text._plain(value, set(), 0)
        assert msgspec.json.encode(plain) == msgspec.json.encode(value)
