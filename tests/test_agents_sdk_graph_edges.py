"""`harness.agents.sdk_graph` at the edges of an SDK graph: a `Handoff` built by hand (its
target found from its function), `nest_handoff_history` (the history summarised into one
message) replayed with no `loop_exempt`, guardrail agents found from the guardrail's code,
and two agents of one name refused unless they are used alike."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import call, fixture, text_step, tool_step, turn, write_suite

from harness import run_suite
from harness.agents.registry import AgentError, surface_of


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Writes `source` as module `name` in a directory on sys.path; returns its spec."""
    monkeypatch.syspath_prepend(str(tmp_path))
    counter = iter(range(1000))

    def write(source: str) -> str:
        name = f"graph_edges_{next(counter)}_{tmp_path.name[-8:]}".replace("-", "_")
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return f"openai-agents:{name}:build_agent"

    return write


BILLING = """
    from agents import Agent, Handoff, function_tool, handoff


    @function_tool
    def lookup_invoice(invoice_id: str) -> str:
        \"\"\"Look an invoice up.\"\"\"
        return f"invoice {invoice_id}: paid"


    @function_tool
    def account_of(customer: str) -> str:
        \"\"\"The customer's account.\"\"\"
        return f"account of {customer}: AC-7"


    billing_agent = Agent(
        name="billing_agent", instructions="Answer billing questions.", tools=[lookup_invoice]
    )
"""

HAND_BUILT = (
    BILLING
    + """

    async def to_billing(context, arguments):
        return billing_agent


    def build_agent():
        transfer = Handoff(
            tool_name="transfer_to_billing",
            tool_description="Hand billing questions to the billing agent.",
            input_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
            on_invoke_handoff=to_billing,
            agent_name="billing_agent",
        )
        return Agent(name="triage_agent", instructions="Route.", handoffs=[transfer])
"""
)


def billing_case(tmp_path: Path, handoff_tool: str, **extra: Any) -> Path:
    steps = [
        tool_step(call("h1", handoff_tool)),
        tool_step(call("l1", "lookup_invoice", invoice_id="INV-1")),
        text_step("INV-1 is paid."),
    ]
    expects = {
        "handoffs": ["billing_agent"],
        "agents": {"billing_agent": {"tools_used": ["lookup_invoice"]}},
        "response_contains": ["paid"],
    }
    data = fixture("billing", [turn("Is INV-1 paid?", *steps)], expects, **extra)
    return write_suite(tmp_path / "evals", {"billing.json": data})


# --- a Handoff built by hand ----------------------------------------------------------------


def test_a_hand_built_handoffs_tool_and_its_targets_tools_are_admissible(module: Any) -> None:
    surface = surface_of(module(HAND_BUILT))
    assert dict(surface.agents) == {
        "triage_agent": {"transfer_to_billing"},
        "billing_agent": {"lookup_invoice"},
    }
    assert surface.hands_off


def test_a_hand_built_handoff_is_replayed_recorded_and_its_target_copied(
    tmp_path: Path, module: Any
) -> None:
    (case,) = run_suite(
        billing_case(tmp_path, "transfer_to_billing"), agent=module(HAND_BUILT)
    ).cases
    assert case.passed, (case.error, [g for g in case.grades if not g.passed])
    assert case.record is not None
    assert [(h.source, h.target) for h in case.record.handoffs] == [
        ("triage_agent", "billing_agent")
    ]
    # The agent its function returned ran as the case's copy: its call recorded as its own.
    assert [(c.name, c.agent) for c in case.record.calls] == [("lookup_invoice", "billing_agent")]


def test_a_hand_built_handoff_whose_function_names_no_agent_leaves_its_target_unknown(
    tmp_path: Path, module: Any
) -> None:
    # The target is taken from a container: nothing says which agent that is before it runs.
    hidden = HAND_BUILT.replace("return billing_agent", 'return DESKS["billing"]')
    hidden += '\n\n    DESKS = {"billing": billing_agent}\n'
    spec = module(hidden)
    surface = surface_of(spec)
    assert surface.tools == {"transfer_to_billing"} and dict(surface.agents) == {}
    # Made all the same: its copy runs and answers from the script, a text answer only.
    steps = [tool_step(call("h1", "transfer_to_billing")), text_step("Billing here: paid.")]
    data = fixture("hidden", [turn("Paid?", *steps)], {"handoffs": ["billing_agent"]})
    (case,) = run_suite(write_suite(tmp_path / "evals", {"h.json": data}), agent=spec).cases
    assert case.passed, (case.error, [g for g in case.grades if not g.passed])
    assert case.record is not None and case.record.final_agent == "billing_agent"


# --- nest_handoff_history -------------------------------------------------------------------

NESTING = (
    BILLING
    + """

    def build_agent():
        return Agent(
            name="triage_agent",
            instructions="Route.",
            tools=[account_of],
            handoffs=[handoff(billing_agent, nest_handoff_history=True)],
        )
"""
)


def nesting_case(tmp_path: Path, **extra: Any) -> Path:
    first = turn("Hi, I am Ann", text_step("Hello Ann, how can I help?"))
    second = turn(
        "Is INV-1 paid?",
        tool_step(call("a1", "account_of", customer="Ann")),
        tool_step(call("h1", "transfer_to_billing_agent")),
        tool_step(call("l1", "lookup_invoice", invoice_id="INV-1")),
        text_step("INV-1 is paid."),
    )
    third = turn(
        "And INV-2?",
        tool_step(call("l2", "lookup_invoice", invoice_id="INV-2")),
        text_step("INV-2 is paid too."),
    )
    expects = {
        "handoffs": ["billing_agent"],
        "response_contains": ["paid too"],
        # The SDK summarised the conversation into one message of the billing agent's.
        "request_contains": [
            {"turn": 1, "step": 2, "role": "assistant", "needle": "user: Hi, I am Ann"},
            {"turn": 1, "step": 2, "role": "assistant", "needle": "account of Ann: AC-7"},
        ],
    }
    data = fixture("nesting", [first, second, third], expects, **extra)
    return write_suite(tmp_path / "evals", {"nesting.json": data})


def test_a_handoff_nesting_the_history_replays_green_with_no_loop_exempt(
    tmp_path: Path, module: Any
) -> None:
    suite = nesting_case(tmp_path, next_turn_agent="last")
    (case,) = run_suite(suite, agent=module(NESTING)).cases
    assert case.passed, (case.error, {g.check: g.detail for g in case.grades if not g.passed})
    assert case.record is not None
    (made,) = case.record.handoffs
    assert (made.turn, made.target, made.nested, made.filtered) == (1, "billing_agent", True, False)
    assert [(c.name, c.agent) for c in case.record.calls] == [
        ("account_of", "triage_agent"),
        ("lookup_invoice", "billing_agent"),
        ("lookup_invoice", "billing_agent"),
    ]


def test_a_nested_handoff_whose_history_loses_the_user_is_caught(
    tmp_path: Path, module: Any
) -> None:
    # The run configuration's mapper makes the nested history; one that keeps only the
    # handoff's own items loses everything the customer said.
    forgetful = NESTING.replace(
        "            handoffs=[handoff(billing_agent, nest_handoff_history=True)],",
        "            handoffs=[handoff(billing_agent, nest_handoff_history=True)],\n"
        "            tools=[account_of, ask_triage],",
    ).replace("            tools=[account_of],\n", "")
    forgetful = forgetful.replace(
        "\n\n    def build_agent():",
        """

    from agents import RunConfig, Runner


    def keep_last(transcript):
        return transcript[-1:]


    inner_triage = Agent(
        name="inner_triage",
        instructions="Route.",
        handoffs=[handoff(billing_agent, nest_handoff_history=True)],
    )


    @function_tool
    async def ask_triage(question: str) -> str:
        \"\"\"Ask the inner desk.\"\"\"
        config = RunConfig(handoff_history_mapper=keep_last)
        return str((await Runner.run(inner_triage, question, run_config=config)).final_output)


    def build_agent():""",
    )
    steps = [
        tool_step(call("q1", "ask_triage", question="Is INV-1 paid?")),
        tool_step(call("h1", "transfer_to_billing_agent")),
        tool_step(call("l1", "lookup_invoice", invoice_id="INV-1")),
        text_step("INV-1 is paid."),
        text_step("It is paid."),
    ]
    data = fixture("inner", [turn("Is INV-1 paid?", *steps)], {"response_contains": ["paid"]})
    suite = write_suite(tmp_path / "evals", {"inner.json": data})
    (case,) = run_suite(suite, agent=module(forgetful)).cases
    assert case.error is None, case.error
    failures = {g.check: g.detail for g in case.grades if not g.passed}
    assert "loop(last_user_input)" in failures, failures
    assert failures["loop(last_user_input)"].startswith(
        'turn 0, request 2 (agent "billing_agent"): this turn\'s input "Is INV-1 paid?" is missing'
    ), failures


# --- guardrail agents -----------------------------------------------------------------------

GUARDED = """
    from agents import Agent, GuardrailFunctionOutput, Runner, input_guardrail, function_tool


    @function_tool
    def check_topic(text: str) -> str:
        \"\"\"Classify a text's topic.\"\"\"
        return "books"


    guardrail_agent = Agent(
        name="guardrail_agent", instructions="Is this about books?", tools=[check_topic]
    )


    @input_guardrail
    async def about_books(context, agent, input):
        result = await Runner.run(guardrail_agent, input, context=context.context)
        return GuardrailFunctionOutput(output_info=result.final_output, tripwire_triggered=False)


    def build_agent():
        return Agent(name="bookseller", instructions="Sell books.", input_guardrails=[about_books])
"""


def test_the_agent_a_guardrail_runs_is_in_the_graph_and_answered_by_the_script(
    tmp_path: Path, module: Any
) -> None:
    spec = module(GUARDED)
    assert dict(surface_of(spec).agents) == {
        "bookseller": frozenset(),
        "guardrail_agent": {"check_topic"},
    }
    # The guardrail runs beside the agent it guards: each step names the agent it answers.
    steps = [
        {**tool_step(call("g1", "check_topic", text="Dune?")), "agent": "guardrail_agent"},
        {**text_step("About books."), "agent": "guardrail_agent"},
        {**text_step("Dune is in stock."), "agent": "bookseller"},
    ]
    expects = {
        "agents": {
            "guardrail_agent": {"tools_used": ["check_topic"]},
            "bookseller": {"exact_tool_calls": 0},
        },
        "response_contains": ["in stock"],
        # The guardrail's agent asks last; the answer is still the bookseller's.
        "final_agent": "bookseller",
    }
    data = fixture("guarded", [turn("Do you have Dune?", *steps)], expects)
    (case,) = run_suite(write_suite(tmp_path / "evals", {"g.json": data}), agent=spec).cases
    assert case.passed, (case.error, {g.check: g.detail for g in case.grades if not g.passed})


# --- two agents of one name -----------------------------------------------------------------

TWINS = (
    BILLING
    + """

    def build_agent():
        other = Agent(name="billing_agent", instructions=TWIN_INSTRUCTIONS, tools=TWIN_TOOLS)
        return Agent(
            name="triage_agent",
            instructions="Route.",
            handoffs=[billing_agent, handoff(other, tool_name_override="transfer_to_twin")],
        )
"""
)


@pytest.mark.parametrize(
    ("instructions", "tools", "differ"),
    [
        ('"Answer billing questions."', "[account_of]", "tools"),
        ('"Answer anything."', "[lookup_invoice]", "instructions"),
    ],
)
def test_two_different_agents_of_one_name_are_refused_naming_what_differs(
    module: Any, instructions: str, tools: str, differ: str
) -> None:
    spec = module(TWINS.replace("TWIN_INSTRUCTIONS", instructions).replace("TWIN_TOOLS", tools))
    with pytest.raises(AgentError) as refused:
        surface_of(spec)
    assert (
        f"two different agents of the graph are named 'billing_agent' (their {differ} "
        "differ): give each a distinct name="
    ) in str(refused.value)


def test_one_agent_built_twice_and_used_alike_is_one_agent(tmp_path: Path, module: Any) -> None:
    spec = module(
        TWINS.replace("TWIN_INSTRUCTIONS", '"Answer billing questions."').replace(
            "TWIN_TOOLS", "[lookup_invoice]"
        )
    )
    surface = surface_of(spec)
    assert surface.agents["billing_agent"] == {"lookup_invoice"}
    (case,) = run_suite(billing_case(tmp_path, "transfer_to_twin"), agent=spec).cases
    assert case.passed, (case.error, [g for g in case.grades if not g.passed])
    assert json.loads(json.dumps([c.agent for c in case.record.calls])) == ["billing_agent"]  # type: ignore[union-attr]
