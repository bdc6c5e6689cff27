"""`harness.reporters.html_transcript`: one case's transcript as the HTML report shows it. Each
recorded dispatch sits under the answer that asked for it, once; the work and the page grow
linearly with a case's tool calls (counted, never timed: `benchmarks/html_report.py` times
it)."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from types import FrameType
from typing import Any

import pytest

from harness.model_boundary import Message, ModelStep, ToolCall
from harness.reporters.html_transcript import record_html
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall
from harness.transcript import TranscriptStep


def _calls(n: int, turn: int = 0) -> tuple[tuple[ToolCall, ...], list[RecordedCall]]:
    asked = tuple(ToolCall(f"c{turn}_{i}", "echo", {"message": f"m{turn}_{i}"}) for i in range(n))
    done = [
        RecordedCall("echo", f'{{"message":"m{turn}_{i}"}}', f"m{turn}_{i}", True, 1.0)
        for i in range(n)
    ]
    return asked, done


def one_wide_step(n: int) -> RunRecord:
    """One answer asking for `n` calls at once (a live model answering with a wave)."""
    asked, done = _calls(n)
    results = [Message(role="tool", content=f"m0_{i}", tool_call_id=f"c0_{i}") for i in range(n)]
    return RunRecord(
        calls=done,
        transcript=[
            TranscriptStep(
                turn=0,
                step=0,
                sent=[Message(role="user", content="go")],
                tools_offered=["echo"],
                answer=ModelStep(tool_calls=asked),
            ),
            TranscriptStep(
                turn=0,
                step=1,
                sent=[Message(role="assistant", tool_calls=asked), *results],
                answer=ModelStep(text="done"),
            ),
        ],
    )


def many_turns(n: int) -> RunRecord:
    """`n` turns of one call each: the calls spread over many requests."""
    steps: list[TranscriptStep] = []
    recorded: list[RecordedCall] = []
    for turn in range(n):
        asked, done = _calls(1, turn)
        recorded += done
        steps.append(
            TranscriptStep(
                turn=turn,
                step=0,
                sent=[Message(role="user", content=f"turn {turn}")],
                answer=ModelStep(tool_calls=asked),
            )
        )
    return RunRecord(calls=recorded, transcript=steps)


def calls_made(work: Callable[[], object]) -> int:
    """Python and C function calls `work` makes: a count of work done that no load on the
    machine moves."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("shape", [one_wide_step, many_turns])
def test_rendering_grows_linearly_with_the_tool_calls(shape: Callable[[int], RunRecord]) -> None:
    # Each call was matched to its dispatch by a search over every dispatch not yet shown
    # (canonicalising each one's arguments again): 5,000 calls took 40 s, 6,000 took 136 s.
    small, large = shape(150), shape(300)
    work = [calls_made(functools.partial(record_html, r)) for r in (small, large)]
    assert work[1] <= 2.2 * work[0], f"twice the calls, {work[1] / work[0]:.2f} times the work"
    size = [len("".join(record_html(r))) for r in (small, large)]
    assert size[1] <= 2.2 * size[0], f"twice the calls, {size[1] / size[0]:.2f} times the page"


class Rows(HTMLParser):
    """The tool-call tables of a transcript: each row's tool, arguments and result."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self._depth = 0
        self.feed(document)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "calls") in attrs:
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag == "td" and self.tables:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_each_dispatch_is_shown_once_under_the_answer_that_asked_for_it() -> None:
    asked = (
        ToolCall("a", "echo", {"message": "two"}),
        ToolCall("b", "echo", {"message": "one"}),
        ToolCall("c", "read_file", {"path": "x.txt"}),
        ToolCall("d", "echo", {"message": "rewritten"}),
    )
    done = [
        RecordedCall("echo", '{"message":"one"}', "first one", True, 1.0),
        RecordedCall("echo", '{"message":"two"}', "the two", True, 1.0),
        RecordedCall("list_files", "{}", "never asked for", True, 1.0),
        # Arguments a framework rewrote: matched by name once no same call is left.
        RecordedCall("echo", '{"message":"REWRITTEN"}', "rewritten", True, 1.0),
        RecordedCall("read_file", '{"path": "x.txt"}', "its text", False, 1.0),
        RecordedCall("echo", '{"message":"one"}', "second one", True, 1.0),
    ]
    record = RunRecord(
        calls=done,
        transcript=[
            TranscriptStep(turn=0, step=0, sent=[], answer=ModelStep(tool_calls=asked)),
            TranscriptStep(
                turn=0, step=1, sent=[], answer=ModelStep(tool_calls=(ToolCall("e", "echo", {}),))
            ),
        ],
    )
    document = "".join(record_html(record))
    under_first, under_second, unasked = Rows(document).tables
    assert [(r[0], r[2]) for r in under_first[1:]] == [
        ("echo", "the two"),
        ("echo", "first one"),
        ("read_file", "its text"),
        ("echo", "rewritten"),
    ]
    assert [(r[0], r[2]) for r in under_second[1:]] == [("echo", "second one")]
    assert [(r[0], r[2]) for r in unasked[1:]] == [("list_files", "never asked for")]
    assert document.index("Tool calls no model answer asked for") < document.index(
        "never asked for"
    )
    assert len(re.findall("second one", document)) == 1


# --- what the page makes of a text, made once ------------------------------------------------


def test_arguments_made_once_are_each_the_arguments_own() -> None:
    """The indented arguments are kept by their text (a dict's: its compact JSON), so that
    arguments equal to others in Python but written otherwise (1, 1.0, true) are each their
    own, and the same arguments show the same whether made or kept."""
    from harness.reporters import html_transcript

    shown = [html_transcript.arguments({"x": value}) for value in (1, 1.0, True, 1, "1")]
    said = [re.search(r"&quot;x&quot;: (.*)\n", s) for s in shown]
    assert [found.group(1) if found else None for found in said] == [
        "1",
        "1.0",
        "true",
        "1",
        "&quot;1&quot;",
    ]
    assert html_transcript.arguments('{"x": 1.0}') == shown[1]
    assert html_transcript.arguments("not json <b>") == "<pre>\nnot json &lt;b&gt;</pre>"


def test_the_texts_kept_are_few_and_short(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.reporters import html_transcript

    monkeypatch.setattr(html_transcript, "_SHOWN_MAX", 8)
    texts = html_transcript._TEXTS
    for n in range(50):
        assert html_transcript.text(f"<{n}>") == f"&lt;{n}&gt;"
        assert len(texts) <= 8
    long = "x" * 300
    assert html_transcript.text(long) == long and long not in texts

    class Odd(str):
        pass

    assert html_transcript.text(Odd("<odd>")) == "&lt;odd&gt;" and "<odd>" not in texts
    # Arguments whose indented form is short but which are long themselves: not kept.
    padded = "{}" + " " * 5000
    assert html_transcript.arguments(padded) == html_transcript.arguments("{}")
    assert padded not in html_transcript._ARGUMENTS and "{}" in html_transcript._ARGUMENTS


def test_messages_made_once_are_each_the_messages_own() -> None:
    """A message without tool calls is kept by all it says: its role, its text and the
    call it answers each tell it apart; kept or made, the same."""
    from harness.reporters import html_transcript

    said = [
        Message(role="user", content="hi <b>"),
        Message(role="system", content="hi <b>"),
        Message(role="tool", content="hi <b>", tool_call_id="call_1"),
        Message(role="tool", content="hi <b>", tool_call_id="call_2"),
        Message(role="user", content="hi <b>"),
    ]
    shown = [html_transcript._message(m) for m in said]
    assert len(set(shown)) == 4 and shown[0] == shown[4]
    assert "call_2" in shown[3] and "call_1" not in shown[3]
    html_transcript._MESSAGES.clear()
    assert [html_transcript._message(m) for m in reversed(said)] == shown[::-1]
