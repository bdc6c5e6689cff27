"""The OpenAI Agents SDK's human-in-the-loop, driven from the case's approval desk: a run
that stops with tool calls held for approval (`needs_approval` on a function tool,
`require_approval` on an MCP server) has each call approved or rejected on its state, as
the fixture's turn decides, and is resumed, as often as it stops again.

Only `harness.agents.frameworks.openai_agents` imports it: it needs the SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents import RunResult, RunState, ToolApprovalItem

from harness.approvals import ApprovalDesk


async def resumed(
    run: Callable[[Any], Awaitable[RunResult]],
    result: RunResult,
    desk: ApprovalDesk,
    *,
    attribute: bool,
) -> RunResult:
    """`result` of `run`, and while the run stops with calls held for approval, each
    decided on `result.to_state()` and the run resumed from it with `run` (the SDK's
    documented pattern). Called only for a run that stopped: most never do, and pay nothing
    for the approvals they do not have. `attribute`: a graph of several agents, whose
    approvals name the agent asking."""
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            _decide(state, item, desk, attribute)
        result = await run(state)
    return result


def _decide(
    state: RunState[Any], item: ToolApprovalItem, desk: ApprovalDesk, attribute: bool
) -> None:
    raw = item.raw_item
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    agent = item.agent.name if attribute else None
    decision = desk.decide(str(call_id or ""), item.tool_name or "", agent)
    if decision.approved:
        state.approve(item)
    else:
        # Without a reason the SDK's own rejection text (or the run's formatter) is sent.
        state.reject(item, rejection_message=decision.reason)
