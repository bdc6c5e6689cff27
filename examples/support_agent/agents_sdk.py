"""The support agent on the OpenAI Agents SDK: an `agents.Agent` with its own tools.

Run its evals with `--agent openai-agents:agents_sdk:build_agent` (see README.md). The
harness keeps the instructions and tools below and swaps only the model.
(Not named `agents.py`: that would shadow the SDK's own `agents` package.)
"""

from __future__ import annotations

from agents import Agent, function_tool
from support_orders import INSTRUCTIONS, lookup, refund


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status.

    Args:
        order_id: The order id, like A-1001.
    """
    return lookup(order_id)


@function_tool
def refund_order(order_id: str, reason: str) -> str:
    """Refund an order that has shipped or been delivered.

    Args:
        order_id: The order id, like A-1001.
        reason: Why the customer wants a refund.
    """
    # Raises on an unknown or unrefundable order: the SDK's default failure handler turns
    # the exception into an error message for the model (and the harness records a failure).
    return refund(order_id, reason)


def build_agent() -> Agent:
    """A fresh support agent; the harness calls this once per case."""
    return Agent(
        name="support",
        instructions=INSTRUCTIONS,
        tools=[lookup_order, refund_order],
    )
