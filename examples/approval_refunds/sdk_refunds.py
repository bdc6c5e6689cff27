"""The refund desk on the OpenAI Agents SDK: `refund_order` needs a person's approval
(`needs_approval=True`), so a run stops with the call in `result.interruptions` until it
is approved or rejected on the run's state, then resumes.

Run its evals with `--agent openai-agents:sdk_refunds:build_agent` (see README.md).
"""

from __future__ import annotations

from agents import Agent, function_tool
from refund_desk import INSTRUCTIONS, lookup, refund


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status and total.

    Args:
        order_id: The order id, like A-1001.
    """
    return lookup(order_id)


@function_tool(needs_approval=True)
def refund_order(order_id: str, reason: str) -> str:
    """Refund an order; a person approves every refund first.

    Args:
        order_id: The order id, like A-1001.
        reason: Why the customer wants a refund.
    """
    return refund(order_id, reason)


def build_agent() -> Agent:
    """A fresh refund desk; the harness calls this once per case."""
    return Agent(name="refunds", instructions=INSTRUCTIONS, tools=[lookup_order, refund_order])
