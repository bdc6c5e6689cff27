"""Agent delegation on pydantic-ai: a booking agent whose tool runs a search agent.

The pattern of pydantic-ai's flight-booking example: `booking_agent`'s `search_flights`
tool delegates to `search_agent` (`await search_agent.run(..., usage=ctx.usage)`), which has
its own tool, `find_flights`; control comes back to the booking agent with the search
agent's answer as the tool's result. Run its evals with
`--agent pydantic-ai:flight_booking:booking_agent` (see README.md). The harness swaps both
agents' models for the replayed script, so neither is built with one.
"""

from __future__ import annotations

from pydantic_ai import Agent, ModelRetry, RunContext

# A fixed timetable, no I/O: the same search always finds the same flights.
FLIGHTS: list[dict[str, str]] = [
    {"number": "ZC101", "origin": "ANC", "destination": "SFO", "date": "2025-01-10", "fare": "220"},
    {"number": "ZC205", "origin": "ANC", "destination": "SFO", "date": "2025-01-10", "fare": "310"},
    {"number": "ZC330", "origin": "SFO", "destination": "ANC", "date": "2025-01-12", "fare": "240"},
]

search_agent: Agent[None, str] = Agent(
    name="flight_search",
    instructions=(
        "You find flights. Call find_flights with the origin, destination and date you are "
        "given, and answer with the flights it lists, cheapest first, or say none was found."
    ),
)

booking_agent: Agent[None, str] = Agent(
    name="booking",
    instructions=(
        "You book flights for the customer. Use search_flights to find flights; book one "
        "with book_flight only when the customer asks you to book it. Never invent flights."
    ),
)


@search_agent.tool_plain
def find_flights(origin: str, destination: str, date: str) -> str:
    """List the flights from origin to destination on date.

    Args:
        origin: The departure airport code, like ANC.
        destination: The arrival airport code, like SFO.
        date: The date, as YYYY-MM-DD.
    """
    found = [
        f"{f['number']} ${f['fare']}"
        for f in FLIGHTS
        if (f["origin"], f["destination"], f["date"])
        == (origin.upper(), destination.upper(), date.strip())
    ]
    return "; ".join(found) if found else "no flights"


@booking_agent.tool
async def search_flights(ctx: RunContext[None], origin: str, destination: str, date: str) -> str:
    """Ask the flight search agent for flights from origin to destination on date.

    Args:
        origin: The departure airport code, like ANC.
        destination: The arrival airport code, like SFO.
        date: The date, as YYYY-MM-DD.
    """
    result = await search_agent.run(
        f"Find flights from {origin} to {destination} on {date}.",
        # The delegate's requests count towards the booking agent's usage and limits.
        usage=ctx.usage,
    )
    return result.output


@booking_agent.tool_plain
def book_flight(flight_number: str) -> str:
    """Book a seat on a flight.

    Args:
        flight_number: The flight number, like ZC101.
    """
    flight = next((f for f in FLIGHTS if f["number"] == flight_number.strip().upper()), None)
    if flight is None:
        # pydantic-ai's way to tell the model a call was wrong: the text goes back to it.
        raise ModelRetry(f"there is no flight {flight_number!r}")
    return f"booked {flight['number']} on {flight['date']}: confirmation B-{flight['number']}"
