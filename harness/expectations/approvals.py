"""Expectations on human approval of tool calls: which tools held their calls for approval
(`approvals_requested`), and, whatever a case declares, the approvals the run got wrong: a
request the fixture did not decide, a decision for a call that never asked, a rejected
call dispatched all the same."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from harness.approvals import Approval
from harness.expectations.base import EXPECTS, Context, Evidence, Grade, Kind, q, q_list
from harness.io.json_paths import child_path
from harness.io.text import clean
from harness.io.validation import Fault, did_you_mean
from harness.transcript import Conversation

AT = f"{EXPECTS}.approvals_requested"


class Approvals(Kind):
    """`approvals_requested`: the exact ordered list of the tools whose calls were held for
    approval over the case (`[]`: none), read from the approvals the run recorded; calls
    held in one answer come in that answer's order."""

    order = 36
    graded_unset = True
    approvals_requested: list[str] | None = None

    def problems(self, context: Context) -> Iterator[Fault]:
        tools = context.agent_tools
        for i, name in enumerate(self.approvals_requested or ()):
            where = f"{AT}[{i}]"
            if not name.strip():
                yield Fault(where, "empty or whitespace-only tool name")
            elif tools is not None and name not in tools:
                yield Fault(where, _unknown_tool(name, tools, context.agent))

    def grades(self, evidence: Evidence) -> Iterator[Grade]:
        record = evidence.record
        if self.approvals_requested is not None:
            asked = [a.tool for a in record.approvals]
            ok = asked == self.approvals_requested
            expected = q_list(self.approvals_requested)
            if ok:
                detail = f"asked for {expected}" if asked else "no approval requested"
            else:
                detail = (
                    f"approvals requested: expected {expected}, the run asked for {q_list(asked)}"
                )
            yield Grade(f"approvals_requested({expected})", ok, detail, "tool", AT)
        for request in record.approvals:
            if not request.decided:
                yield _undecided(request, evidence.conversation)
        conversation = evidence.conversation
        # A run of a case deciding no call, where nothing asked: nothing to say (most runs).
        if conversation is not None and (conversation.approvals or any(conversation.decisions)):
            if conversation.scripted:
                yield from _never_asked(conversation)
            yield from _rejected_dispatched(conversation)


def _unknown_tool(name: str, tools: frozenset[str], agent: str) -> str:
    hint = did_you_mean(name, tools)
    listed = ", ".join(sorted(tools)) or "none"
    return f"{name!r} is not a tool of {agent}{hint}; its tools: {listed}"


def _call(call_id: str, tool: str) -> str:
    return f"{clean(call_id)} ({clean(tool)})"


def _undecided(request: Approval, conversation: Conversation | None) -> Grade:
    live = conversation is not None and not conversation.scripted
    key = request.tool if live else request.call_id
    detail = (
        f"turn {request.turn}: {_call(request.call_id, request.tool)} asked for approval, but "
        f"the fixture gives no decision for it (so it was rejected, and did not run): add "
        f'{q(key)}: {{"approve": true}} or {{"approve": false, "reason": …}} to '
        f"$.turns[{request.turn}].approvals"
    )
    return Grade("approval(undecided)", False, detail, "tool", f"$.turns[{max(request.turn, 0)}]")


def _never_asked(conversation: Conversation) -> Iterator[Grade]:
    """A decision the fixture gives for a call that was never held for approval: the tool
    no longer asks (it ran, if it ran, without a human's say)."""
    asked = {(a.turn, a.call_id) for a in conversation.approvals}
    for turn, decisions in enumerate(conversation.decisions):
        for call_id in decisions:
            if (turn, call_id) in asked:
                continue
            tool, ran = _fate(conversation, turn, call_id)
            said = "it was dispatched without asking" if ran else "it was never dispatched"
            detail = (
                f"turn {turn}: the fixture decides {_call(call_id, tool)}, but the agent never "
                f"held it for approval; {said}"
            )
            where = child_path(f"$.turns[{turn}].approvals", call_id)
            yield Grade("approval(never_asked)", False, detail, "tool", where)


def _fate(conversation: Conversation, turn: int, call_id: str) -> tuple[str, bool]:
    """The tool of the scripted call `call_id` of `turn`, and whether a call of that tool
    was dispatched in answer to the step scripting it."""
    for index, exchange in enumerate(conversation.exchanges):
        step = conversation.answer_to(index) if exchange.turn == turn else None
        for call in step.tool_calls if step is not None else ():
            if call.id == call_id:
                ran = any(c.name == call.name for c in conversation.answered(index))
                return call.name, ran
    return "?", False


def _rejected_dispatched(conversation: Conversation) -> Iterator[Grade]:
    """A rejected call is never run: after the answer holding it, its tool was dispatched
    no more often than that answer's calls of it that were not rejected."""
    rejected = conversation.unapproved
    if not rejected:
        return
    for index, exchange in enumerate(conversation.exchanges):
        step = conversation.answer_to(index)
        if step is None or not rejected.intersection(c.id for c in step.tool_calls):
            continue
        allowed = Counter(c.name for c in step.tool_calls if c.id not in rejected)
        ran = Counter(c.name for c in conversation.answered(index))
        for call in step.tool_calls:
            if call.id in rejected and ran[call.name] > allowed[call.name]:
                ran[call.name] -= 1  # one rejected call of it named per extra dispatch
                detail = (
                    f"turn {exchange.turn}: {_call(call.id, call.name)} was rejected, but the "
                    f"agent dispatched it all the same"
                )
                where = child_path(f"$.turns[{exchange.turn}].approvals", call.id)
                yield Grade("approval(rejected_dispatched)", False, detail, "tool", where)
