"""The bank's public information service: a small MCP server (stdio) the support agent uses.

Written with the `mcp` package's `MCPServer` (the FastMCP interface); the support agent
starts it over stdio with the Python running the agent (`bank_support.bank_info_toolset`). Fixed
tables, no I/O: the same question always gets the same answer.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

# EUR per unit of each currency, fixed for the day.
RATES: dict[str, str] = {"USD": "0.92", "GBP": "1.17", "CHF": "1.04"}

BRANCHES: dict[str, str] = {
    "lisbon": "Lisbon branch: Monday to Friday 09:00-16:00",
    "porto": "Porto branch: Monday to Friday 09:00-15:00, Saturday 10:00-13:00",
}

server = MCPServer("bank-info")


@server.tool()
def exchange_rate(currency: str) -> str:
    """Today's rate of a currency in EUR.

    Args:
        currency: The ISO code of the currency, like USD.
    """
    code = currency.strip().upper()
    rate = RATES.get(code)
    return f"1 {code} = {rate} EUR today" if rate else f"no rate for {code!r}"


@server.tool()
def branch_hours(city: str) -> str:
    """The opening hours of the bank's branch in a city.

    Args:
        city: The city, like Lisbon.
    """
    return BRANCHES.get(city.strip().lower(), f"no branch in {city}")


if __name__ == "__main__":
    server.run()  # stdio
