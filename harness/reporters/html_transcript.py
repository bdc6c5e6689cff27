"""A run record as HTML, for the HTML report (`harness.reporters.html`): its transcript,
request by request (what each request added, the tools offered, the answer, and the tool
calls the answer asked for with their recorded arguments, results and durations), or, for
a record kept without one, its responses and tool calls; and the escaping every part of
that report goes through.

Untrusted text is cleaned (`text.clean`, `text.clean_lines`) and HTML-escaped here, quotes
included, so it is inert in an element and in an attribute alike.
"""

from __future__ import annotations

import html
import json
from collections import deque
from typing import TYPE_CHECKING, Any

from harness.io.text import clean, clean_lines

if TYPE_CHECKING:
    from harness.model_boundary import Message, ModelStep, ToolCall
    from harness.run_record import RunRecord
    from harness.tool_registry import RecordedCall

BLOCK_LIMIT = 20_000  # characters one text block shows; the JSON report keeps them all


def text(untrusted: str) -> str:
    """Untrusted text on one line, escaped (quotes too: safe in an attribute)."""
    return html.escape(clean(untrusted))


def block(untrusted: str, css: str = "") -> str:
    """Untrusted text as a `<pre>` block, its lines kept, clipped."""
    shown = clean_lines(untrusted)
    if len(shown) > BLOCK_LIMIT:
        more = len(shown) - BLOCK_LIMIT
        shown = shown[:BLOCK_LIMIT] + f"\n… ({more} more characters in the JSON report)"
    attributes = f' class="{css}"' if css else ""
    # The newline after <pre> is dropped by HTML, so the text shows from its first line.
    return f"<pre{attributes}>\n{html.escape(shown)}</pre>"


def arguments(sent: str | dict[str, Any]) -> str:
    """Tool arguments, indented when they are JSON (shown as sent when they are not)."""
    try:
        value = json.loads(sent) if isinstance(sent, str) else sent
        indented = json.dumps(value, indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
        return block(str(sent))
    return block(indented)


def row(*cells: str, css: str = "") -> str:
    return f'<tr class="{css}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def table(head: tuple[str, ...], rows: list[str], attrs: str = "") -> str:
    heads = "".join(f"<th>{h}</th>" for h in head)
    return f"<table{attrs}><tr>{heads}</tr>{''.join(rows)}</table>"


# --- records ------------------------------------------------------------------------------


def record_html(record: RunRecord) -> list[str]:
    said = (
        f"{record.model_calls} model call(s), {record.input_tokens} input and "
        f"{record.output_tokens} output token(s), {len(record.calls)} tool call(s), "
        f"{record.duration_ms:.1f} ms"
    )
    steps = getattr(record, "transcript", None)  # records made before it was kept have none
    body = _transcript(steps, record.calls) if steps else _without_transcript(record)
    return [f'<h4>Transcript</h4><p class="sub">{said}</p>', *body]


def _turn_name(turn: int) -> str:
    # From 0, as fixtures (`$.turns[1]`) and the checks (`turn 1, request 0`) count.
    return "While the agent started" if turn < 0 else f"Turn {turn}"


def _transcript(steps: list[Any], calls: list[RecordedCall]) -> list[str]:
    # Each recorded dispatch is shown once, under the answer asking for it.
    pending = Unclaimed(calls)
    lines: list[str] = []
    turn: int | None = None
    for step in steps:
        if step.turn != turn:
            lines.append("" if turn is None else "</section>")
            turn = step.turn
            lines.append(f'<section class="turn"><h4>{_turn_name(step.turn)}</h4>')
        lines += _request(step, pending)
    lines.append("</section>")
    left = pending.left()
    if left:
        lines += ['<p class="sub">Tool calls no model answer asked for:</p>', _calls(left)]
    return lines


def _request(step: Any, pending: Unclaimed) -> list[str]:
    offered = ", ".join(step.tools_offered) or "none"
    lines = [
        f'<div class="request"><p class="sub">model request {step.step} '
        f'(tools offered: {text(offered)})</p><ol class="sent">',
        *(_message(m) for m in step.sent),
        "</ol>",
    ]
    answer: ModelStep | None = step.answer
    if answer is None:
        lines.append(
            '<p class="unanswered">Not answered: the run stopped at this request '
            "(see the run error).</p>"
        )
    else:
        found = [c for c in (pending.take(call) for call in answer.tool_calls) if c]
        lines += [_answer(answer), _calls(found) if found else ""]
    lines.append("</div>")
    return lines


def _tool_calls(calls: tuple[ToolCall, ...]) -> str:
    return "".join(
        f'<div>call <code>{text(c.name)}</code> <span class="sub">id {text(c.id)}</span>'
        f"{arguments(c.arguments)}</div>"
        for c in calls
    )


def _message(message: Message) -> str:
    of = (
        f' <span class="sub">for {text(message.tool_call_id)}</span>'
        if message.tool_call_id
        else ""
    )
    content = block(message.content) if message.content else ""
    calls = _tool_calls(message.tool_calls)
    return f'<li><span class="role">{text(message.role)}</span>{of}{content}{calls}</li>'


def _answer(answer: ModelStep) -> str:
    tokens = f"{answer.input_tokens} in / {answer.output_tokens} out tokens"
    text = block(answer.text) if answer.text or not answer.tool_calls else ""
    return (
        f'<div class="answer"><span class="role">answer</span><span class="sub">{tokens}</span>'
        f"{text}{_tool_calls(answer.tool_calls)}</div>"
    )


class Unclaimed:
    """The recorded dispatches no answer has claimed yet. `take(call)` gives the one of
    `call`: the first left of its name with its arguments, else of its name (a framework
    may have rewritten the arguments). Each dispatch's arguments are made canonical once and
    each is passed over once in all: searching every dispatch left for each call made the
    page quadratic in a case's tool calls."""

    def __init__(self, calls: list[RecordedCall]) -> None:
        from harness.tool_registry import canonical_arguments, canonical_text

        self._canonical = canonical_arguments
        self._calls = calls
        self._taken = [False] * len(calls)
        self._named: dict[str, deque[int]] = {}
        self._same: dict[tuple[str, str], deque[int]] = {}
        for index, call in enumerate(calls):
            self._named.setdefault(call.name, deque()).append(index)
            same = (call.name, canonical_text(call.arguments))
            self._same.setdefault(same, deque()).append(index)

    def take(self, call: ToolCall) -> RecordedCall | None:
        same = self._first(self._same.get((call.name, self._canonical(call.arguments))))
        index = same if same is not None else self._first(self._named.get(call.name))
        if index is None:
            return None
        self._taken[index] = True
        return self._calls[index]

    def left(self) -> list[RecordedCall]:
        """The dispatches never claimed, in the order they were made."""
        return [call for call, taken in zip(self._calls, self._taken, strict=True) if not taken]

    def _first(self, queue: deque[int] | None) -> int | None:
        # A dispatch taken through the other index is dropped here, once.
        while queue and self._taken[queue[0]]:
            queue.popleft()
        return queue[0] if queue else None


def _calls(calls: list[RecordedCall]) -> str:
    rows = [
        row(
            f"<code>{text(c.name)}</code>",
            arguments(c.arguments),
            block(c.result),
            "ok" if c.success else "failed",
            f"{c.duration_ms:.2f} ms",
            css="pass" if c.success else "fail",
        )
        for c in calls
    ]
    return table(("tool", "arguments", "result", "", "duration"), rows, ' class="calls"')


def _without_transcript(record: RunRecord) -> list[str]:
    responses = record.turn_responses or ([record.final_response] if record.final_response else [])
    lines = ['<p class="sub">No transcript was kept: the responses and tool calls.</p>']
    lines += [f"<h4>{_turn_name(i)}: response</h4>{block(r)}" for i, r in enumerate(responses)]
    return lines + ([_calls(record.calls)] if record.calls else [])
