"""The support agent on pydantic-ai: a `pydantic_ai.Agent` with its own tools.

Run its evals with `--agent pydantic-ai:pydantic_agent:build_agent` (see README.md). The
harness keeps the instructions and tools below and swaps only the model, so the agent is
built without one.
"""

from __future__ import annotations

from pydantic_ai import Agent, ModelRetry
from support_orders import INSTRUCTIONS, OrderError, lookup, refund


def build_agent() -> Agent[None, str]:
    """A fresh support agent; the harness calls this once per case."""
    agent: Agent[None, str] = Agent(name="support", instructions=INSTRUCTIONS)

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order's status.

        Args:
            order_id: The order id, like A-1001.
        """
        return lookup(order_id)

    @agent.tool_plain(retries=2)
    def refund_order(order_id: str, reason: str) -> str:
        """Refund an order that has shipped or been delivered.

        Args:
            order_id: The order id, like A-1001.
            reason: Why the customer wants a refund.
        """
        try:
            return refund(order_id, reason)
        except OrderError as exc:
            # pydantic-ai's way to tell the model a call was wrong: a plain exception would
            # end the run; ModelRetry sends this text back and lets the model try again.
            raise ModelRetry(str(exc)) from None

    return agent
