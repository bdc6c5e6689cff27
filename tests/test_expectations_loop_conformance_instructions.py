"""`loop(instructions)` for framework agents: the instructions an agent declares (static or
dynamic), as its framework resolved them for a request, reach that request, in every
request the framework sends them in. A fault between what the framework hands its model
and the request the adapter builds for the boundary fails the case with no snapshot."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Recording, call, case_of, fixture, text_step, tool_step, turn, write_module
from msgspec.structs import replace

from harness import AgentContext, ModelRequest
from harness.agents.registry import resolve_agent
from harness.pipeline import run_cases
from harness.verdict.reports import CaseReport

# Written as the SDK's docs write agents: static instructions, instructions from a function
# of the run context, and a triage agent handing off to a specialist.
SDK_AGENTS = """
from agents import Agent, RunContextWrapper, function_tool

CALLED = []


@function_tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up by its id.\"\"\"
    return f"Order {order_id} has shipped."


def build_agent() -> Agent:
    return Agent(
        name="support",
        instructions="You are the shop's support agent. Look orders up before answering.",
        tools=[lookup_order],
    )


def customer_instructions(context: RunContextWrapper[dict], agent: Agent[dict]) -> str:
    CALLED.append(agent.name)
    return f"The customer is {context.context['customer']}. Greet them by name."


def build_dynamic_agent() -> Agent:
    return Agent(name="support", instructions=customer_instructions, tools=[lookup_order])


def request_number(context: RunContextWrapper[dict], agent: Agent[dict]) -> str:
    CALLED.append(agent.name)
    return f"Answer briefly. This is request {len(CALLED)} of the conversation."


def build_counting_agent() -> Agent:
    return Agent(name="support", instructions=request_number, tools=[lookup_order])


def build_triage_agent() -> Agent:
    billing = Agent(
        name="billing",
        handoff_description="Answers billing questions.",
        instructions="You are the billing specialist. Look orders up before answering.",
        tools=[lookup_order],
    )
    return Agent(
        name="triage",
        instructions="Route the customer to the right specialist.",
        handoffs=[billing],
    )
"""

# Written as pydantic-ai's docs write an agent: static instructions, a dynamic system prompt
# and dynamic instructions from the deps.
PAI_AGENT = """
from dataclasses import dataclass

from pydantic_ai import Agent, RunContext


@dataclass
class Customer:
    customer: str


support_agent = Agent(deps_type=Customer, instructions="Be brief.")


@support_agent.system_prompt
def shop(ctx: RunContext[Customer]) -> str:
    return "You are the support agent of an online shop."


@support_agent.instructions
def customer_name(ctx: RunContext[Customer]) -> str:
    return f"The customer is {ctx.deps.customer}."


@support_agent.tool_plain
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up by its id.\"\"\"
    return f"Order {order_id} has shipped."
"""

SHOP = "You are the support agent of an online shop."


class Faulty(Recording):
    """The adapter with a fault between its framework and the boundary: each request it
    builds goes through `fault` before the model sees it (recorded as built)."""

    def __init__(self, inner: Any, fault: Callable[[ModelRequest], ModelRequest]) -> None:
        super().__init__(inner)
        self.fault = fault

    def start(self, context: AgentContext) -> Any:
        context.model.rewrite_request = self.fault
        return super().start(context)


def without_system(keep: Callable[[ModelRequest, str], bool]) -> Callable[..., ModelRequest]:
    def fault(request: ModelRequest) -> ModelRequest:
        kept = tuple(m for m in request.messages if m.role != "system" or keep(request, m.content))
        return replace(request, messages=kept)

    return fault


def lookup_case(expects: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    return fixture(
        "lookup",
        [
            turn(
                "Where is order 7?",
                tool_step(call("c1", "lookup_order", order_id="7")),
                text_step("Order 7 has shipped."),
            ),
            turn("Thanks!", text_step("You're welcome.")),
        ],
        expects or {"tools_used": ["lookup_order"], "response_contains": ["welcome"]},
        **top,
    )


def run(adapter: Any, data: dict[str, Any]) -> CaseReport:
    (case,) = run_cases([case_of(data)], adapter, suite="s").cases
    return case


def failing(case: CaseReport) -> dict[str, str]:
    return {g.check: g.detail for g in case.grades if not g.passed}


@pytest.fixture
def sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, SDK_AGENTS, "sdk_agents")


@pytest.fixture
def pai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_module(tmp_path, PAI_AGENT, "pai_agent")


CONTEXT = {"setup": {"context": {"customer": "Ann"}}}


@pytest.mark.parametrize(
    ("factory", "declared"),
    [
        ("build_agent", "You are the shop's support agent. Look orders up before answering."),
        ("build_dynamic_agent", "The customer is Ann. Greet them by name."),
    ],
)
def test_sdk_instructions_static_or_dynamic_reach_every_request(
    sdk: str, factory: str, declared: str
) -> None:
    adapter = Recording(resolve_agent(f"openai-agents:{sdk}:{factory}"))
    case = run(adapter, lookup_case(**CONTEXT))
    assert case.passed, (case.error, failing(case))
    assert len(adapter.requests) == 3
    for request in adapter.requests:
        assert request.declared_instructions == (declared,)
        assert request.messages[0].content == declared
    # The SDK resolved the function once per request; the harness never called it again.
    called = importlib.import_module(sdk).CALLED
    assert len(called) == (3 if factory == "build_dynamic_agent" else 0)


def test_dynamic_instructions_that_change_every_request_conform_with_no_exemption(
    sdk: str,
) -> None:
    adapter = Recording(resolve_agent(f"openai-agents:{sdk}:build_counting_agent"))
    case = run(adapter, lookup_case())
    assert case.passed, (case.error, failing(case))
    said = [r.messages[0].content for r in adapter.requests]
    assert said == [f"Answer briefly. This is request {n} of the conversation." for n in (1, 2, 3)]


def test_sdk_instructions_lost_on_the_way_to_the_model_fail_the_case_naming_them(
    sdk: str,
) -> None:
    # Every request loses them, so no first request's system message can be compared with.
    adapter = Faulty(
        resolve_agent(f"openai-agents:{sdk}:build_dynamic_agent"),
        without_system(lambda _request, _text: False),
    )
    case = run(adapter, lookup_case(**CONTEXT))
    assert not case.passed and case.error is None
    detail = failing(case)["loop(instructions)"]
    assert detail.startswith(
        'turn 0, request 0: the instructions the agent declared ("The customer is Ann. Greet '
        'them by name.") never reached the model: no system message of the request holds them'
    ), detail
    (grade,) = [g for g in case.grades if not g.passed]
    assert grade.field == "$.turns[0].steps[0]"


def test_a_specialist_whose_instructions_are_lost_is_named(sdk: str) -> None:
    adapter = Faulty(
        resolve_agent(f"openai-agents:{sdk}:build_triage_agent"),
        without_system(lambda request, _text: request.agent != "billing"),
    )
    data = fixture(
        "billing",
        [
            turn(
                "Where is order 7?",
                tool_step(call("h1", "transfer_to_billing")),
                {**tool_step(call("c1", "lookup_order", order_id="7")), "agent": "billing"},
                {**text_step("Order 7 has shipped."), "agent": "billing"},
            )
        ],
        {"tools_used": ["lookup_order"], "response_contains": ["shipped"]},
    )
    case = run(adapter, data)
    detail = failing(case)["loop(instructions)"]
    assert detail.startswith(
        'turn 0, request 1 (agent "billing"): the instructions the agent declared ("You are '
        "the billing specialist."
    ), detail
    # The same run without the fault conforms.
    correct = run(Recording(resolve_agent(f"openai-agents:{sdk}:build_triage_agent")), data)
    assert correct.passed, (correct.error, failing(correct))


def test_pydantic_ai_instructions_and_system_prompts_reach_every_request(pai: str) -> None:
    adapter = Recording(resolve_agent(f"pydantic-ai:{pai}:support_agent"))
    case = run(adapter, lookup_case(**CONTEXT))
    assert case.passed, (case.error, failing(case))
    assert len(adapter.requests) == 3
    for request in adapter.requests:
        # The system prompt pydantic-ai put in the history's first request is sent again
        # with the history, in the second turn too; the instructions are resolved anew.
        assert request.declared_instructions == (SHOP, "Be brief.\n\nThe customer is Ann.")
        system = [m.content for m in request.messages if m.role == "system"]
        assert SHOP in system and "Be brief.\n\nThe customer is Ann." in system


def test_a_lost_pydantic_ai_system_prompt_fails_though_the_instructions_arrive(pai: str) -> None:
    adapter = Faulty(
        resolve_agent(f"pydantic-ai:{pai}:support_agent"),
        without_system(lambda _request, text: text != SHOP),
    )
    case = run(adapter, lookup_case(**CONTEXT))
    detail = failing(case)["loop(instructions)"]
    assert detail.startswith(
        f'turn 0, request 0: the instructions the agent declared ("{SHOP}") never reached'
    ), detail


def test_an_exemption_lifts_the_rule_for_its_case(sdk: str) -> None:
    adapter = Faulty(
        resolve_agent(f"openai-agents:{sdk}:build_agent"),
        without_system(lambda _request, _text: False),
    )
    expects = {
        "tools_used": ["lookup_order"],
        "response_contains": ["welcome"],
        "loop_exempt": {"instructions": "the agent's instructions are sent another way"},
    }
    case = run(adapter, lookup_case(expects))
    assert case.passed, (case.error, failing(case))
    del expects["loop_exempt"]
    assert "loop(instructions)" in failing(run(adapter, lookup_case(expects)))
