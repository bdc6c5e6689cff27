"""`harness.agents.frameworks.pydantic_ai` with an `output_type`: each output mode scripted
as the model sends it (a call to an output tool, or the JSON in text for native and prompted
output), the output validator's retry in the record for the next step to answer, and the
final response graded as the output's JSON."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import call, fixture, text_step, tool_step, turn, write_module, write_suite

from harness import (
    AdmissionError,
    AgentContext,
    ModelBoundary,
    ModelRequest,
    ModelStep,
    ToolCall,
    ToolRegistry,
    run_suite,
)
from harness.agents.registry import agent_surface, resolve_agent
from harness.reporters.case_view import render_case
from harness.verdict.reports import CaseReport

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

# pydantic-ai's bank-support example, as its docs write it (without the database).
BANK_SUPPORT = """
from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, NativeOutput, PromptedOutput, TextOutput, ToolOutput

BALANCES = {123: 123.45}


class SupportOutput(BaseModel):
    support_advice: str = Field(description="Advice returned to the customer")
    block_card: bool = Field(description="Whether to block the customer's card")
    risk: int = Field(description="Risk level of query", ge=0, le=10)


class Refund(BaseModel):
    amount: float


class Escalation(BaseModel):
    team: str


def build_agent() -> Agent[None, SupportOutput]:
    support_agent = Agent(
        output_type=SupportOutput,
        instructions=(
            "You are a support agent in our bank, give the "
            "customer support and judge the risk level of their query."
        ),
    )

    @support_agent.tool_plain
    def customer_balance(include_pending: bool) -> float:
        \"\"\"Returns the customer's current account balance.\"\"\"
        return BALANCES[123]

    @support_agent.output_validator
    def advice_is_polite(output: SupportOutput) -> SupportOutput:
        if "stupid" in output.support_advice:
            raise ModelRetry("Be polite to the customer.")
        return output

    return support_agent


def union_agent() -> Agent:
    return Agent(output_type=[Refund, Escalation], instructions="Refund or escalate.")


def named_agent() -> Agent:
    return Agent(output_type=ToolOutput(SupportOutput, name="submit_advice"))


def native_agent() -> Agent:
    agent = Agent(output_type=NativeOutput(SupportOutput), instructions="Advise.")

    @agent.output_validator
    def low_risk_only(output: SupportOutput) -> SupportOutput:
        if output.risk > 5:
            raise ModelRetry("Judge the risk again: nothing here is that risky.")
        return output

    return agent


def prompted_agent() -> Agent:
    return Agent(output_type=PromptedOutput(SupportOutput), instructions="Advise.")


def text_agent() -> Agent:
    def shout(text: str) -> str:
        return text.upper()

    return Agent(output_type=TextOutput(shout))
"""

POLITE = {"support_advice": "Your balance is 123.45", "block_card": False, "risk": 1}
RUDE = {**POLITE, "support_advice": "stupid question: it is 123.45"}


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, BANK_SUPPORT, "bank_support")


def run_one(tmp_path: Path, agent: str, data: dict[str, Any]) -> CaseReport:
    suite = write_suite(tmp_path / "suite", {"case.json": data})
    (case,) = run_suite(suite, agent=agent, root=tmp_path).cases
    return case


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


def balance_case(*steps: dict[str, Any], **expects: Any) -> dict[str, Any]:
    return fixture(
        "balance",
        [
            turn(
                "What is my balance?",
                tool_step(call("c1", "customer_balance", include_pending=True)),
                *steps,
            )
        ],
        expects,
    )


def answer(call_id: str, name: str = "final_result", **fields: Any) -> dict[str, Any]:
    return tool_step(call(call_id, name, **fields))


# --- tool output: the output tool is scripted and admitted ----------------------------------


def test_the_output_tools_call_is_the_answer_graded_as_its_json(
    tmp_path: Path, module: str
) -> None:
    data = balance_case(
        answer("c2", **POLITE),
        tools_used=["customer_balance"],
        exact_tool_calls=1,
        tools_offered=["customer_balance", "final_result"],
        response_json={"/block_card": False, "/risk": 1},
        response_contains=["123.45"],
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None
    assert case.record.final_response == (
        '{"support_advice":"Your balance is 123.45","block_card":false,"risk":1}'
    )
    # The output tool's call is the answer, not a dispatch: only the function tool ran.
    assert [c.name for c in case.record.calls] == ["customer_balance"]


def test_a_wrong_field_fails_naming_its_pointer(tmp_path: Path, module: str) -> None:
    data = balance_case(answer("c2", **POLITE), response_json={"/risk": 7, "/block_card": False})
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is None, case.error
    assert failing(case) == {'response_json("/risk")': "got 1; expected 7"}
    # The transcript shows the call the model made, then the response graded.
    assert (
        '    = response graded: {"support_advice":"Your balance is 123.45","block_card":false,'
        '"risk":1}'
    ) in render_case(case).splitlines()


def test_the_output_validators_retry_is_recorded_and_the_second_try_scripted(
    tmp_path: Path, module: str
) -> None:
    data = balance_case(
        answer("c2", **RUDE),
        answer("c3", **POLITE),
        request_contains=[
            {"turn": 0, "step": 2, "role": "tool", "needle": "Be polite to the customer."}
        ],
        response_json={"/support_advice": "Your balance is 123.45"},
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None and case.record.model_calls == 3


def test_a_retry_the_script_does_not_answer_is_a_run_error_showing_it(
    tmp_path: Path, module: str
) -> None:
    data = balance_case(answer("c2", **RUDE), response_json={"/risk": 1})
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is not None
    assert "turn 0 requested more model responses than the trace scripts" in case.error
    assert 'tool: result for c2: "{\\"error\\":\\"Be polite to the customer.\\"}"' in case.error


def test_a_retry_expected_but_never_sent_fails_the_check(tmp_path: Path, module: str) -> None:
    # The validator lets a polite answer through: no retry, so the check naming it fails.
    data = balance_case(
        answer("c2", **POLITE),
        request_contains=[{"turn": 0, "role": "tool", "needle": "Be polite"}],
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is None, case.error
    assert list(failing(case)) == ['request_contains(turn 0, "tool", "Be polite")']


def test_a_union_offers_an_output_tool_per_member(tmp_path: Path, module: str) -> None:
    agent = f"pydantic-ai:{module}:union_agent"
    surface = agent_surface(resolve_agent(agent))
    assert surface.tools == {"final_result_Refund", "final_result_Escalation"}
    data = fixture(
        "escalate",
        [turn("My card was stolen", answer("c1", "final_result_Escalation", team="fraud"))],
        {"response_json": {"/team": "fraud"}},
    )
    case = run_one(tmp_path, agent, data)
    assert case.error is None, case.error
    assert case.passed, failing(case)
    assert case.record is not None and case.record.final_response == '{"team":"fraud"}'


def test_a_named_output_tool_is_admitted_by_its_name(tmp_path: Path, module: str) -> None:
    data = fixture(
        "named",
        [turn("Advise me", answer("c1", "submit_advice", **POLITE))],
        {"response_json": {"/risk": 1}},
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:named_agent", data)
    assert case.passed, case.error or failing(case)


def test_an_unknown_output_tool_is_refused_with_did_you_mean(tmp_path: Path, module: str) -> None:
    data = balance_case(answer("c2", "final_reslt", **POLITE), response_json={"/risk": 1})
    with pytest.raises(AdmissionError) as refused:
        run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    (problem,) = refused.value.problems
    assert problem.field == "$.turns[0].steps[1].response.tool_calls[0].name"
    assert problem.message == (
        f"tool 'final_reslt' is not registered by agent 'pydantic-ai:{module}:build_agent' "
        "(its tools: customer_balance, final_result); did you mean final_result?"
    )


def test_a_text_answer_where_the_output_tool_is_wanted_is_a_run_error(
    tmp_path: Path, module: str
) -> None:
    # pydantic-ai refuses text from a tool-output agent and asks again: the script has no
    # more steps, and the error shows what pydantic-ai asked.
    data = balance_case(text_step("Your balance is 123.45"), response_contains=["123.45"])
    case = run_one(tmp_path, f"pydantic-ai:{module}:build_agent", data)
    assert case.error is not None
    assert "turn 0 requested more model responses than the trace scripts" in case.error


# --- native and prompted output: the JSON in a text step ------------------------------------


def test_native_output_is_scripted_as_json_text_and_its_retry_recorded(
    tmp_path: Path, module: str
) -> None:
    risky = '{"support_advice": "Block it", "block_card": true, "risk": 9}'
    calm = '{"support_advice": "Block it", "block_card": true, "risk": 4}'
    data = fixture(
        "native",
        [turn("I lost my card", text_step(risky), text_step(calm))],
        {
            "response_json": {"/risk": 4, "/block_card": True},
            "request_contains": [
                {"turn": 0, "step": 1, "role": "user", "needle": "Judge the risk again"}
            ],
        },
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:native_agent", data)
    assert case.error is None, case.error
    assert case.passed, failing(case)


def test_prompted_output_sends_its_schema_in_the_instructions(tmp_path: Path, module: str) -> None:
    data = fixture(
        "prompted",
        [
            turn(
                "Advise me", text_step('{"support_advice": "Save", "block_card": false, "risk": 0}')
            )
        ],
        {
            "response_json": {"/support_advice": "Save"},
            "instructions_contain": ["Always respond with a JSON object", '"support_advice"'],
        },
    )
    case = run_one(tmp_path, f"pydantic-ai:{module}:prompted_agent", data)
    assert case.error is None, case.error
    assert case.passed, failing(case)


def test_text_output_is_the_functions_result(tmp_path: Path, module: str) -> None:
    data = fixture("text", [turn("Hi", text_step("hello"))], {"response_contains": ["HELLO"]})
    case = run_one(tmp_path, f"pydantic-ai:{module}:text_agent", data)
    assert case.passed, case.error or failing(case)


class Recorder:
    def __init__(self, *steps: ModelStep) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> ModelStep:
        self.requests.append(request)
        return self.steps.pop(0)


def first_request(agent: str, step: ModelStep) -> ModelRequest:
    backend = Recorder(step)
    session = resolve_agent(agent).start(AgentContext("c", ModelBoundary(backend), ToolRegistry()))
    asyncio.run(session.run_turn("Advise me"))  # type: ignore[arg-type]
    return backend.requests[0]


def test_the_request_says_which_tools_are_output_tools(module: str) -> None:
    step = ModelStep(tool_calls=(ToolCall("c1", "final_result", POLITE),))
    request = first_request(f"pydantic-ai:{module}:build_agent", step)
    assert [(t.name, t.output) for t in request.tools] == [
        ("customer_balance", False),
        ("final_result", True),
    ]
    assert request.output_schema is None


@pytest.mark.parametrize(
    ("factory", "mode"), [("native_agent", "native"), ("prompted_agent", "prompted")]
)
def test_the_request_carries_the_schema_of_an_answer_in_text(
    module: str, factory: str, mode: str
) -> None:
    step = ModelStep(text='{"support_advice": "Save", "block_card": false, "risk": 0}')
    request = first_request(f"pydantic-ai:{module}:{factory}", step)
    schema = request.output_schema
    assert schema is not None
    assert (schema.name, schema.mode) == ("SupportOutput", mode)
    assert schema.schema["required"] == ["support_advice", "block_card", "risk"]
    assert request.tools == ()
