"""The airline's flight-status service: a small MCP server (stdio) the desk agent consults.

Written with the `mcp` package's `MCPServer` (the FastMCP interface). The airline desk
agent launches it with the Python running the agent (`airline_desk.flight_status_server`),
as the SDK's MCP documentation does with `MCPServerStdio`. A fixed timetable, no I/O: the
same question always gets the same answer.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

FLIGHTS: dict[str, str] = {
    "ZC118": "ZC118 Lisbon-Oslo: on time, departs 09:40 from gate B12",
    "ZC205": "ZC205 Oslo-Lisbon: delayed 45 minutes, departs 15:10 from gate C3",
    "ZC330": "ZC330 Lisbon-Madrid: cancelled; passengers are rebooked on ZC332",
}

BAGGAGE: dict[str, str] = {
    "economy": "economy: one cabin bag up to 8 kg; checked bags are paid extras",
    "business": "business: two cabin bags up to 8 kg each and two checked bags up to 32 kg",
}

server = MCPServer("flight-status")


@server.tool()
def flight_status(flight_number: str) -> str:
    """Today's status of a flight: on time, delayed or cancelled, with its gate.

    Args:
        flight_number: The flight number, like ZC118.
    """
    number = flight_number.strip().upper()
    return FLIGHTS.get(number, f"no flight {number} today")


@server.tool()
def baggage_allowance(cabin: str) -> str:
    """The baggage allowance of a cabin.

    Args:
        cabin: economy or business.
    """
    return BAGGAGE.get(cabin.strip().lower(), f"no cabin {cabin!r}: economy or business")


if __name__ == "__main__":
    server.run()  # stdio: the transport MCPServerStdio speaks
