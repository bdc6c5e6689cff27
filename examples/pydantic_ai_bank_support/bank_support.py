"""A bank's support agent on pydantic-ai, built from pydantic-ai's own patterns.

* **Dependencies**: each conversation is with one customer, a `SupportDeps` dataclass
  (`deps_type`) the instructions and tools read through `ctx.deps`; `block_card` writes the
  cards it blocked into it.
* **Structured output**: every answer is a `SupportAnswer` (`output_type`), which the model
  gives by calling pydantic-ai's output tool, `final_result`.
* **Output validator**: `blocked_only_if_blocked` sends the model back with `ModelRetry`
  when its answer says a card is blocked that no `block_card` call blocked.
* **MCP toolset**: exchange rates and branch hours come from the bank's MCP server
  (`bank_info_server.py`), an `MCPToolset` over stdio started with the Python running the
  agent.

Run its evals with `--agent pydantic-ai:bank_support:support_agent` (see README.md). The
harness keeps all of this and swaps only the model, so the agent is built with none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from fastmcp.client.transports import StdioTransport
from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.mcp import MCPToolset

BANK_INFO_SERVER = Path(__file__).with_name("bank_info_server.py")


@dataclass
class Customer:
    name: str
    balance_eur: float
    pending_eur: float
    cards: tuple[str, ...]  # the last four digits of each card


# The bank's ledger: fixed, no I/O.
CUSTOMERS: dict[str, Customer] = {
    "C-1001": Customer("Grace", balance_eur=1204.50, pending_eur=-75.20, cards=("4821", "9034")),
    "C-1002": Customer("Alan", balance_eur=88.10, pending_eur=0.0, cards=("1177",)),
}


@dataclass
class SupportDeps:
    """Who the agent is talking to, and what it did for them in this conversation."""

    customer_id: str
    blocked_cards: list[str] = field(default_factory=list)


class SupportAnswer(BaseModel):
    """The agent's answer to the customer."""

    advice: str = Field(description="The advice given to the customer.")
    card_blocked: bool = Field(description="Whether a card was blocked.")
    risk: int = Field(description="The risk level of the query.", ge=0, le=10)


INSTRUCTIONS = (
    "You are the support agent of ZeroClaw Bank. Give the customer support and judge the "
    "risk of their query from 0 to 10. Look balances up with customer_balance and block a "
    "lost or stolen card with block_card; never claim a card is blocked otherwise. "
    "Exchange rates and branch hours come from the bank-info tools; never guess them."
)


def bank_info_toolset() -> MCPToolset:
    """The bank's public information service, started with the Python running the agent."""
    return MCPToolset(StdioTransport(sys.executable, [str(BANK_INFO_SERVER)]), id="bank_info")


support_agent = Agent(
    deps_type=SupportDeps,
    output_type=SupportAnswer,
    name="bank_support",
    instructions=INSTRUCTIONS,
    toolsets=[bank_info_toolset()],
)


def _customer(deps: SupportDeps) -> Customer:
    customer = CUSTOMERS.get(deps.customer_id)
    if customer is None:
        raise ModelRetry(f"there is no customer {deps.customer_id!r}: do not invent one")
    return customer


@support_agent.instructions
def customer_name(ctx: RunContext[SupportDeps]) -> str:
    customer = CUSTOMERS.get(ctx.deps.customer_id)
    if customer is None:
        return f"Customer {ctx.deps.customer_id} is not a customer of the bank."
    return f"The customer's name is {customer.name!r}."


@support_agent.tool
def customer_balance(ctx: RunContext[SupportDeps], include_pending: bool) -> str:
    """The customer's current account balance.

    Args:
        include_pending: Whether to count pending transactions.
    """
    customer = _customer(ctx.deps)
    balance = customer.balance_eur + (customer.pending_eur if include_pending else 0.0)
    return f"{balance:.2f} EUR" + (" including pending" if include_pending else "")


@support_agent.tool
def block_card(ctx: RunContext[SupportDeps], card_last4: str, reason: str) -> str:
    """Block one of the customer's cards at once.

    Args:
        card_last4: The last four digits of the card.
        reason: Why it is blocked: lost, stolen or fraud.
    """
    customer = _customer(ctx.deps)
    if card_last4 not in customer.cards:
        raise ModelRetry(f"the customer has no card ending {card_last4}: ask which card")
    if card_last4 not in ctx.deps.blocked_cards:
        ctx.deps.blocked_cards.append(card_last4)
    return f"card ending {card_last4} blocked ({reason}); a new card is on its way"


@support_agent.output_validator
def blocked_only_if_blocked(ctx: RunContext[SupportDeps], answer: SupportAnswer) -> SupportAnswer:
    """An answer may say a card is blocked only once block_card has blocked one."""
    if answer.card_blocked and not ctx.deps.blocked_cards:
        raise ModelRetry("no card was blocked: call block_card first, or set card_blocked false")
    return answer
