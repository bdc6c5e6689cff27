"""A triage agent on the OpenAI Agents SDK that hands off to two specialists: billing (with
its own tool) and faq (which hands back to triage when a question is not for it).

Run its evals with `--agent openai-agents:triage_agents:build_agent` (see README.md). The
harness keeps every agent's instructions, tools and handoffs and swaps only the model.
(Not named `agents.py`: that would shadow the SDK's own `agents` package.)
"""

from __future__ import annotations

from agents import Agent, function_tool, handoff
from agents.extensions.handoff_prompt import prompt_with_handoff_instructions

# A fixed invoice book, no I/O: the same id always gives the same answer.
INVOICES: dict[str, str] = {
    "INV-100": "paid on 2026-03-02 (49.00 EUR)",
    "INV-101": "open, due 2026-04-15 (120.00 EUR)",
}

FAQ = "Opening hours: 9:00-17:00 CET, Monday to Friday. Returns: within 30 days."


@function_tool
def lookup_invoice(invoice_id: str) -> str:
    """Look up an invoice's status.

    Args:
        invoice_id: The invoice id, like INV-100.
    """
    status = INVOICES.get(invoice_id.strip().upper())
    return f"invoice {invoice_id}: {status or 'not found'}"


def build_agent() -> Agent:
    """A fresh triage agent and its specialists; the harness calls this once per case."""
    billing_agent = Agent(
        name="billing_agent",
        handoff_description="Answers questions about invoices and payments.",
        instructions=prompt_with_handoff_instructions(
            "You answer billing questions. Look invoices up with lookup_invoice before "
            "answering; never invent an invoice's status."
        ),
        tools=[lookup_invoice],
    )
    faq_agent = Agent(
        name="faq_agent",
        handoff_description="Answers general questions: opening hours, returns.",
        instructions=prompt_with_handoff_instructions(
            f"You answer general questions from this FAQ only: {FAQ} "
            "If the question is not answered there, transfer back to the triage agent."
        ),
    )
    triage_agent = Agent(
        name="triage_agent",
        instructions=prompt_with_handoff_instructions(
            "You are the triage agent of a shop's help desk. Never answer yourself: hand "
            "billing questions to the billing agent and general questions to the faq agent."
        ),
        handoffs=[billing_agent, handoff(faq_agent)],
    )
    faq_agent.handoffs.append(triage_agent)
    return triage_agent
