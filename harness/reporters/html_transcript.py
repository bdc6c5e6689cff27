"""A run record as HTML, for the HTML report (`harness.reporters.html`): its transcript,
request by request (what each request added, the tools offered, the answer, and the tool
calls the answer asked for with their recorded arguments, results and durations; in a
multi-agent run the agent of each request and call, and each handoff after the request it
followed; the decision on each call held for approval), or, for a record kept without
one, its responses and tool calls; and the escaping every part of that report goes through.

Untrusted text is cleaned (`text.clean`, `text.clean_lines`) and HTML-escaped here, quotes
included, so it is inert in an element and in an attribute alike.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from harness.expectations.guardrails import describe
from harness.io.text import clean, clean_lines
from harness.reporters.claims import (
    ApprovalsOf,
    HandoffsAfter,
    Unclaimed,
    decision_text,
    graded_responses,
)

if TYPE_CHECKING:
    from harness.approvals import Approval
    from harness.model_boundary import Handoff, Message, ModelStep, ToolCall
    from harness.run_record import RunRecord
    from harness.tool_registry import RecordedCall

BLOCK_LIMIT = 20_000  # characters one text block shows; the JSON report keeps them all


class Shown(dict[Any, str]):
    """What the page made of a text, by the text: a run's cases say the same things again
    and again (roles, tool names, instructions, checks, the same arguments), each made
    once. Only short texts are kept, and only so many: the page's memory stays flat."""

    def __init__(self, make: Any, longest: int) -> None:
        super().__init__()
        self._make = make
        self._longest = longest

    def __missing__(self, key: Any) -> str:
        return self.keep(key, self._make(*key) if type(key) is tuple else self._make(key))

    def keep(self, key: Any, made: str) -> str:
        # Only of texts themselves (a subclass could hash or compare otherwise), short as
        # what is made of them: a long text can make a short one ("{}" and a megabyte of
        # spaces), and the memo outlives the run.
        texts = key if type(key) is tuple else (key,)
        longest = self._longest
        if len(made) <= longest and all(type(t) is str and len(t) <= longest for t in texts):
            if len(self) >= _SHOWN_MAX:
                self.clear()
            self[key] = made
        return made


_SHOWN_MAX = 1024  # texts each memo keeps


def _text(untrusted: str) -> str:
    return html.escape(clean(untrusted))


def block(untrusted: str, css: str = "") -> str:
    """Untrusted text as a `<pre>` block, its lines kept, clipped."""
    return _BLOCKS[untrusted, css]


def _block(untrusted: str, css: str) -> str:
    shown = clean_lines(untrusted)
    if len(shown) > BLOCK_LIMIT:
        more = len(shown) - BLOCK_LIMIT
        shown = shown[:BLOCK_LIMIT] + f"\n… ({more} more characters in the JSON report)"
    attributes = f' class="{css}"' if css else ""
    # The newline after <pre> is dropped by HTML, so the text shows from its first line.
    return f"<pre{attributes}>\n{html.escape(shown)}</pre>"


def arguments(sent: str | dict[str, Any]) -> str:
    """Tool arguments, indented when they are JSON (shown as sent when they are not)."""
    if type(sent) is str:
        return _ARGUMENTS[sent]
    try:
        # The same tokens as the indented form, in the same order: it says which that is.
        compact = json.dumps(sent, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _arguments(sent)
    shown = _INDENTED.get(compact)
    return shown if shown is not None else _INDENTED.keep(compact, _arguments(sent))


def _arguments(sent: str | dict[str, Any]) -> str:
    try:
        value = json.loads(sent) if isinstance(sent, str) else sent
        indented = json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested past what Python
        return block(str(sent))  # parses; or what an agent changed after it was checked
    return block(indented)


_TEXTS = Shown(_text, 256)
# Untrusted text on one line, escaped (quotes too: safe in an attribute): `_text`, looked up.
text = _TEXTS.__getitem__
_BLOCKS = Shown(_block, 4096)
_ARGUMENTS = Shown(_arguments, 4096)
_INDENTED = Shown(_arguments, 4096)  # of arguments as a dict, by their compact JSON


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
    steps = record.transcript
    handoffs = HandoffsAfter(record.handoffs)
    approvals = ApprovalsOf(record.approvals)
    body = _transcript(record, handoffs, approvals) if steps else _without_transcript(record)
    left = handoffs.left()
    if left:
        body += ['<p class="sub">Handoffs after no request shown:</p>']
        body += [_handoff(h, f"{_turn_name(h.turn)}, after request {h.step}: ") for h in left]
    tripped = [run for run in record.guardrails if run.tripped]
    if tripped:
        body += [
            f'<p class="guardrail sub">guardrail tripped: {text(describe(run))}</p>'
            for run in tripped
        ]
    held = approvals.left()
    if held:
        body += ['<p class="sub">Approvals of calls no request shown made:</p>']
        body += [_approval(a, f"{_turn_name(a.turn)}: ") for a in held]
    return [f'<h4>Transcript</h4><p class="sub">{said}</p>', *body]


def _turn_name(turn: int) -> str:
    # From 0, as fixtures (`$.turns[1]`) and the checks (`turn 1, request 0`) count.
    return "While the agent started" if turn < 0 else f"Turn {turn}"


def _transcript(record: RunRecord, handoffs: HandoffsAfter, approvals: ApprovalsOf) -> list[str]:
    # Each recorded dispatch is shown once, under the answer asking for it; each handoff
    # after the request it followed.
    pending = Unclaimed(record.calls)
    graded = graded_responses(record)
    lines: list[str] = []
    turn: int | None = None
    for step in record.transcript or ():
        if step.turn != turn:
            lines += _graded(graded, turn)
            lines.append("" if turn is None else "</section>")
            turn = step.turn
            lines.append(f'<section class="turn"><h4>{_turn_name(step.turn)}</h4>')
            lines += map(_handoff, handoffs.after(step.turn, -1))
        lines += _request(step, pending, approvals)
        lines += map(_handoff, handoffs.after(step.turn, step.step))
    lines += _graded(graded, turn)
    lines.append("</section>")
    left = pending.left()
    if left:
        lines += ['<p class="sub">Tool calls no model answer asked for:</p>', _calls(left)]
    return lines


def _request(step: Any, pending: Unclaimed, approvals: ApprovalsOf) -> list[str]:
    offered = ", ".join(step.tools_offered) or "none"
    # Who asked, in a multi-agent run; a run of one agent names none.
    by = f" by {text(step.agent)}" if step.agent is not None else ""
    lines = [
        f'<div class="request"><p class="sub">model request {step.step}{by} '
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
        held = (approvals.of(step.turn, call.id) for call in answer.tool_calls)
        decided = [_approval(a) for a in held if a is not None]
        taken = (pending.take(call, step.agent) for call in answer.tool_calls)
        found = [c for c in taken if c]
        lines += [_answer(answer), *decided, _calls(found) if found else ""]
    lines.append("</div>")
    return lines


def _graded(graded: dict[int, str], turn: int | None) -> list[str]:
    if turn is None or turn not in graded:
        return []
    return [f'<p class="sub">response graded</p>{block(graded[turn])}']


def _approval(approval: Approval, where: str = "") -> str:
    css = "pass" if approval.approved else "fail"
    held = f"<code>{text(approval.tool)}</code> {text(approval.call_id)}"
    said = text(decision_text(approval))
    return f'<p class="approval sub {css}">{where}approval of {held}: {said}</p>'


def _handoff(handoff: Handoff, where: str = "") -> str:
    to = f"{text(handoff.source)} → {text(handoff.target)}"
    return f'<p class="handoff sub">{where}handoff: {to}</p>'


def _tool_calls(calls: tuple[ToolCall, ...]) -> str:
    return "".join(
        f'<div>call <code>{text(c.name)}</code> <span class="sub">id {text(c.id)}</span>'
        f"{arguments(c.arguments)}</div>"
        for c in calls
    )


def _message(message: Message) -> str:
    said = (message.role, message.content, message.tool_call_id or "")
    return _message_of(*said, message.tool_calls) if message.tool_calls else _MESSAGES[said]


def _message_of(role: str, content: str, call_id: str, calls: tuple[ToolCall, ...] = ()) -> str:
    of = f' <span class="sub">for {text(call_id)}</span>' if call_id else ""
    shown = block(content) if content else ""
    return f'<li><span class="role">{text(role)}</span>{of}{shown}{_tool_calls(calls)}</li>'


_MESSAGES = Shown(_message_of, 4096)  # a message without tool calls, by what it says


def _answer(answer: ModelStep) -> str:
    tokens = f"{answer.input_tokens} in / {answer.output_tokens} out tokens"
    text = block(answer.text) if answer.text or not answer.tool_calls else ""
    return (
        f'<div class="answer"><span class="role">answer</span><span class="sub">{tokens}</span>'
        f"{text}{_tool_calls(answer.tool_calls)}</div>"
    )


def _calls(calls: list[RecordedCall]) -> str:
    rows = [
        row(
            f"<code>{text(c.name)}</code>"
            + (f' <span class="sub">by {text(c.agent)}</span>' if c.agent is not None else ""),
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
