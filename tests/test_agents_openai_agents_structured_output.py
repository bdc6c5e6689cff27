"""`harness.agents.frameworks.openai_agents` with an `output_type`: the script holds the JSON
the model sends in text, the SDK validates it into the object, and the final response graded
(and shown) is that object's JSON, so `response_json` reads it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import call, fixture, text_step, tool_step, turn, write_module, write_suite

from harness import AgentContext, ModelBoundary, ModelRequest, ModelStep, ToolRegistry, run_suite
from harness.agents.registry import resolve_agent
from harness.reporters.case_view import render_case
from harness.reporters.html_transcript import record_html
from harness.verdict.reports import CaseReport

# Written as the SDK's docs write an agent with structured output.
SEAT_AGENTS = """
from dataclasses import dataclass

from agents import Agent, AgentOutputSchema, function_tool
from pydantic import BaseModel
from typing_extensions import TypedDict


class SeatAnswer(BaseModel):
    seat: str
    confirmed: bool


@dataclass
class SeatChoice:
    seat: str
    row: int


class SeatDict(TypedDict):
    seat: str
    aisle: bool


@function_tool
def find_seat(preference: str) -> str:
    \"\"\"Find a free seat matching the passenger's preference.\"\"\"
    return "12A" if preference == "window" else "12C"


def build_agent() -> Agent:
    return Agent(
        name="seat_agent",
        instructions="Book the passenger a seat.",
        tools=[find_seat],
        output_type=SeatAnswer,
    )


def dataclass_agent() -> Agent:
    return Agent(name="seat_agent", instructions="Choose a seat.", output_type=SeatChoice)


def typeddict_agent() -> Agent:
    return Agent(name="seat_agent", instructions="Choose a seat.", output_type=SeatDict)


def list_agent() -> Agent:
    return Agent(name="seat_agent", instructions="List seats.", output_type=list[SeatAnswer])


def loose_agent() -> Agent:
    # A schema the strict mode cannot express: the SDK's documented way out.
    schema = AgentOutputSchema(dict[str, int], strict_json_schema=False)
    return Agent(name="seat_agent", instructions="Count seats.", output_type=schema)
"""

SEAT_JSON = '{"seat": "12A", "confirmed": true}'


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, SEAT_AGENTS, "seat_agents")


def run_one(tmp_path: Path, agent: str, data: dict[str, Any]) -> CaseReport:
    suite = write_suite(tmp_path / "suite", {"case.json": data})
    (case,) = run_suite(suite, agent=agent, root=tmp_path).cases
    return case


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def booking(expects: dict[str, Any], answer: str = SEAT_JSON) -> dict[str, Any]:
    return fixture(
        "book-window-seat",
        [
            turn(
                "A window seat, please.",
                tool_step(call("c1", "find_seat", preference="window")),
                text_step(answer),
            )
        ],
        expects,
    )


def test_the_structured_answer_is_graded_as_its_json(tmp_path: Path, module: str) -> None:
    expects = {
        "tools_used": ["find_seat"],
        "response_json": {"/seat": "12A", "/confirmed": True},
        "response_contains": ['"seat":"12A"'],
    }
    case = run_one(tmp_path, f"openai-agents:{module}:build_agent", booking(expects))
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None
    # The JSON of the object the SDK built, not Python's str() of it.
    assert case.record.final_response == '{"seat":"12A","confirmed":true}'


def test_a_wrong_field_fails_naming_its_pointer(tmp_path: Path, module: str) -> None:
    expects = {"response_json": {"/seat": "14C", "/confirmed": True}}
    case = run_one(tmp_path, f"openai-agents:{module}:build_agent", booking(expects))
    assert case.error is None, case.error
    assert failing(case) == {'response_json("/seat")': 'got "12A"; expected "14C"'}
    (grade,) = [g for g in case.grades if not g.passed]
    assert grade.field == '$.expects.response_json["/seat"]'


def test_reports_show_the_graded_json_after_the_turn(tmp_path: Path, module: str) -> None:
    # Failing, so its transcript is kept and shown.
    expects = {"response_json": {"/seat": "14C"}}
    case = run_one(tmp_path, f"openai-agents:{module}:build_agent", booking(expects))
    shown = render_case(case).splitlines()
    # The model's text as it sent it, then the response graded.
    answered = shown.index(f"    ← model answers {SEAT_JSON}")
    assert shown[answered + 1] == '    = response graded: {"seat":"12A","confirmed":true}'
    assert case.record is not None
    page = "".join(record_html(case.record))
    assert "response graded" in page
    assert "{&quot;seat&quot;:&quot;12A&quot;,&quot;confirmed&quot;:true}" in page


def test_a_plain_text_agent_shows_no_graded_line(tmp_path: Path) -> None:
    # Failing, so its transcript is kept and shown.
    data = fixture("plain", [turn("Say hi", text_step("hi"))], {"response_contains": ["bye"]})
    case = run_one(tmp_path, "openai-agents", data)
    shown = render_case(case)
    assert "    ← model answers hi" in shown.splitlines()
    assert "response graded" not in shown


@pytest.mark.parametrize(
    ("factory", "answer", "graded"),
    [
        # A dataclass is no JSON object to the SDK: it wraps it, and the model sends the wrapper.
        ("dataclass_agent", '{"response": {"seat": "3F", "row": 3}}', '{"seat":"3F","row":3}'),
        ("typeddict_agent", '{"seat": "3C", "aisle": true}', '{"seat":"3C","aisle":true}'),
        (
            "list_agent",
            '{"response": [{"seat": "1A", "confirmed": false}]}',
            '[{"seat":"1A","confirmed":false}]',
        ),
        ("loose_agent", '{"free": 4, "taken": 2}', '{"free":4,"taken":2}'),
    ],
)
def test_every_kind_of_output_type_is_graded_as_its_json(
    tmp_path: Path, module: str, factory: str, answer: str, graded: str
) -> None:
    first = json.loads(graded)
    pointer = "/0/seat" if isinstance(first, list) else f"/{next(iter(first))}"
    want = first[0]["seat"] if isinstance(first, list) else next(iter(first.values()))
    data = fixture(
        "structured", [turn("Choose", text_step(answer))], {"response_json": {pointer: want}}
    )
    case = run_one(tmp_path, f"openai-agents:{module}:{factory}", data)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None and case.record.final_response == graded


def test_an_answer_that_is_not_the_output_type_is_a_run_error_showing_the_schema(
    tmp_path: Path, module: str
) -> None:
    # The dataclass wants its wrapper; the SDK's own error redacts the text and says neither.
    data = fixture(
        "unwrapped",
        [turn("Choose", text_step('{"seat": "3F", "row": 3}'))],
        {"response_json": {"/seat": "3F"}},
    )
    case = run_one(tmp_path, f"openai-agents:{module}:dataclass_agent", data)
    assert case.error is not None
    assert case.error.startswith(
        "ModelBehaviorError: Invalid JSON when parsing model output: "
        'the model answered "{\\"seat\\": \\"3F\\", \\"row\\": 3}", which is not the agent\'s '
        "output_type (SeatChoice); the JSON it must send: "
    )
    assert '"required":["response"]' in case.error


class Recorder:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> ModelStep:
        self.requests.append(request)
        return ModelStep(text=self.answer)


def test_the_request_carries_the_output_schema_as_the_sdk_sends_it(module: str) -> None:
    adapter = resolve_agent(f"openai-agents:{module}:build_agent")
    backend = Recorder(SEAT_JSON)
    session = adapter.start(AgentContext("c", ModelBoundary(backend), ToolRegistry()))
    answer = asyncio.run(session.run_turn("A seat, please."))  # type: ignore[arg-type]
    assert answer == '{"seat":"12A","confirmed":true}'
    (request,) = backend.requests
    schema = request.output_schema
    assert schema is not None
    assert (schema.name, schema.strict, schema.mode) == ("final_output", True, "native")
    assert schema.schema["required"] == ["seat", "confirmed"]
    assert schema.schema["additionalProperties"] is False


def test_a_plain_text_agent_asks_for_no_schema() -> None:
    adapter = resolve_agent("openai-agents")
    backend = Recorder("hi")
    session = adapter.start(AgentContext("c", ModelBoundary(backend), ToolRegistry()))
    assert asyncio.run(session.run_turn("Say hi")) == "hi"  # type: ignore[arg-type]
    assert backend.requests[0].output_schema is None
