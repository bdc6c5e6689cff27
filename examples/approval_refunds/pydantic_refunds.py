"""The refund desk on pydantic-ai: `refund_order` is a deferred tool that requires approval
(`requires_approval=True`), so a run ends with `DeferredToolRequests` as its output until
the next run carries the decisions in `DeferredToolResults`.

Run its evals with `--agent pydantic-ai:pydantic_refunds:build_agent` (see README.md).
"""

from __future__ import annotations

from pydantic_ai import Agent, DeferredToolRequests
from refund_desk import INSTRUCTIONS, lookup, refund


def build_agent() -> Agent[None, str | DeferredToolRequests]:
    """A fresh refund desk; the harness calls this once per case."""
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        name="refunds", instructions=INSTRUCTIONS, output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order's status and total.

        Args:
            order_id: The order id, like A-1001.
        """
        return lookup(order_id)

    @agent.tool_plain(requires_approval=True)
    def refund_order(order_id: str, reason: str) -> str:
        """Refund an order; a person approves every refund first.

        Args:
            order_id: The order id, like A-1001.
            reason: Why the customer wants a refund.
        """
        return refund(order_id, reason)

    return agent
