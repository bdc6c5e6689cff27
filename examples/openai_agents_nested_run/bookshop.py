"""A bookseller on the OpenAI Agents SDK whose function tool runs another agent itself: the
SDK's "agents as tools" custom pattern (`result = await Runner.run(agent, input)` inside an
`@function_tool`), for a tool that needs its own settings (here `max_turns`) where
`Agent.as_tool` would not do. The stock agent has a function tool of its own.

Run its evals with `--agent openai-agents:bookshop:build_agent` (see README.md). The harness
finds the stock agent from the tool's code (the module global it runs), keeps every agent's
instructions and tools, and swaps only the model: the nested run's model calls are the
script's too. (Not named `agents.py`: that would shadow the SDK's own `agents` package.)
"""

from __future__ import annotations

from agents import Agent, Runner, function_tool

# A fixed shelf, no I/O: the same title always gives the same answer.
SHELF: dict[str, str] = {
    "dune": "3 copies, 12.50 EUR",
    "emma": "out of stock, back on 2026-05-04",
}


@function_tool
def check_shelf(title: str) -> str:
    """How many copies of a book are on the shelf, and its price.

    Args:
        title: The book's title, like Dune.
    """
    found = SHELF.get(title.strip().lower())
    return f"{title}: {found or 'not carried'}"


stock_agent = Agent(
    name="stock_agent",
    instructions=(
        "You answer questions about the shop's stock. Look each title up with check_shelf "
        "and answer from its result only; never guess a stock level or a price."
    ),
    tools=[check_shelf],
)


@function_tool
async def ask_stock(question: str) -> str:
    """Ask the stock agent about the books on the shelf.

    Args:
        question: The question for the stock agent, naming the title.
    """
    result = await Runner.run(stock_agent, question, max_turns=5)
    return str(result.final_output)


def build_agent() -> Agent:
    """A fresh bookseller; the harness calls this once per case."""
    return Agent(
        name="bookseller",
        instructions=(
            "You are a bookshop's assistant. Never answer stock or price questions yourself: "
            "ask the stock agent with ask_stock, then answer the customer from what it said."
        ),
        tools=[ask_stock],
    )
