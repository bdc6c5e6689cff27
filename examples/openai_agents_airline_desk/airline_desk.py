"""An airline's customer desk on the OpenAI Agents SDK, built from the SDK's own patterns.

* **Context**: each conversation is about one booking, a `BookingContext` the tools read and
  write through `RunContextWrapper` (the seat moved, the fare refunded so far).
* **Input guardrail**: `no_card_numbers` stops a message carrying a payment card number
  before the model sees it (the desk never takes card details in chat).
* **Structured output**: every answer is a `DeskReply` (the text for the customer, the
  seat and the amount refunded after the turn).
* **Human approval**: `refund_fare` is a `@function_tool(needs_approval=True)`: the run
  pauses until a person approves or rejects the refund.
* **MCP server**: flight status and baggage rules come from the airline's MCP server
  (`flight_status_server.py`), launched over stdio with the Python running the agent.

Run its evals with `--agent openai-agents:airline_desk:build_agent` (see README.md). The
harness keeps all of this and swaps only the model. (Not named `agents.py`: that would
shadow the SDK's own `agents` package.)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunContextWrapper,
    TResponseInputItem,
    function_tool,
    input_guardrail,
)
from agents.mcp import MCPServerStdio
from pydantic import BaseModel, Field

FLIGHT_STATUS_SERVER = Path(__file__).with_name("flight_status_server.py")

# Seats already taken, per flight: a fixed seat map, no I/O.
TAKEN_SEATS: dict[str, frozenset[str]] = {
    "ZC118": frozenset({"1A", "1C", "12A", "12B"}),
    "ZC205": frozenset({"3D", "14C"}),
}
SEAT = re.compile(r"(?:[1-9]|[12][0-9]|30)[A-F]")
CARD_NUMBER = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")


@dataclass
class BookingContext:
    """The booking a conversation is about: given to the run, shared by every tool."""

    confirmation: str
    passenger: str
    flight: str
    seat: str
    fare_eur: float
    refunded_eur: float = 0.0


def booking_context(data: dict[str, Any]) -> BookingContext:
    """A fresh booking for one conversation, from the booking record's fields."""
    return BookingContext(**data)


class DeskReply(BaseModel):
    """The desk's answer to one message."""

    message: str = Field(description="What the customer reads.")
    seat: str = Field(description="The passenger's seat after this message.")
    refunded_eur: float = Field(description="The amount of the fare refunded so far, in EUR.")


def desk_instructions(wrapper: RunContextWrapper[BookingContext], agent: Agent[Any]) -> str:
    booking = wrapper.context
    return (
        f"You are the customer desk of ZeroClaw Air, talking with {booking.passenger} about "
        f"booking {booking.confirmation} on flight {booking.flight}. Check a flight's status "
        "or baggage rules with the flight-status tools before answering; never guess them. "
        "Move the passenger's seat with change_seat. Refund part or all of the fare with "
        "refund_fare only when the passenger asks and gives a reason; a person approves every "
        "refund. Answer with the passenger's seat and the amount refunded so far."
    )


@function_tool
def change_seat(wrapper: RunContextWrapper[BookingContext], new_seat: str) -> str:
    """Move the passenger to another seat on their flight.

    Args:
        new_seat: The seat wanted: a row from 1 to 30 and a letter from A to F, like 14C.
    """
    booking = wrapper.context
    seat = new_seat.strip().upper()
    if not SEAT.fullmatch(seat):
        return f"{new_seat!r} is not a seat on {booking.flight}: rows 1-30, letters A-F"
    if seat in TAKEN_SEATS.get(booking.flight, frozenset()):
        return f"seat {seat} on {booking.flight} is taken; the passenger keeps {booking.seat}"
    previous, booking.seat = booking.seat, seat
    return f"seat changed from {previous} to {seat} on {booking.flight}"


@function_tool(needs_approval=True)
def refund_fare(wrapper: RunContextWrapper[BookingContext], amount_eur: float, reason: str) -> str:
    """Refund part or all of the booking's fare. A person approves every refund first.

    Args:
        amount_eur: The amount to refund, in EUR.
        reason: Why the passenger asks for it, in their words.
    """
    booking = wrapper.context
    left = booking.fare_eur - booking.refunded_eur
    if not 0 < amount_eur <= left:
        return f"refused: {amount_eur:.2f} EUR is more than the {left:.2f} EUR left of the fare"
    booking.refunded_eur += amount_eur
    return (
        f"refunded {amount_eur:.2f} EUR of booking {booking.confirmation} ({reason}); "
        f"reference RF-{booking.confirmation}"
    )


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _latest_user_text(turn_input: str | list[TResponseInputItem]) -> str:
    # Earlier turns are in the input too: only the message just sent is checked, so a
    # conversation can go on once a refused message is behind it.
    if isinstance(turn_input, str):
        return turn_input
    for item in reversed(turn_input):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return " ".join(str(part.get("text", "")) for part in content or [])
    return ""


@input_guardrail(run_in_parallel=False)
def no_card_numbers(
    wrapper: RunContextWrapper[BookingContext],
    agent: Agent[Any],
    turn_input: str | list[TResponseInputItem],
) -> GuardrailFunctionOutput:
    """Trips on a message holding a payment card number, before the model reads it."""
    text = _latest_user_text(turn_input)
    cards = [
        m.group() for m in CARD_NUMBER.finditer(text) if _luhn_valid(re.sub(r"\D", "", m.group()))
    ]
    return GuardrailFunctionOutput(
        output_info={"card_numbers": len(cards)}, tripwire_triggered=bool(cards)
    )


def flight_status_server() -> MCPServerStdio:
    """The airline's flight-status MCP server, started with the Python running the agent."""
    return MCPServerStdio(
        name="flight_status",
        params={"command": sys.executable, "args": [str(FLIGHT_STATUS_SERVER)]},
        cache_tools_list=True,
    )


def build_agent() -> Agent[BookingContext]:
    """A fresh desk agent; the harness calls this once per case."""
    return Agent[BookingContext](
        name="airline_desk",
        instructions=desk_instructions,
        tools=[change_seat, refund_fare],
        mcp_servers=[flight_status_server()],
        input_guardrails=[no_card_numbers],
        output_type=DeskReply,
    )
