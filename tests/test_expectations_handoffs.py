"""`harness.expectations.handoffs`: `handoffs` and `final_agent`, graded against the handoffs
and the final agent the model boundary recorded, and admitted against the agent graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import (
    BUILTIN_SURFACE,
    Cli,
    admit,
    expects,
    fixture,
    only,
    project,
    refuse_one,
    replay_trace,
    shape_at,
    text_step,
    write_fixture,
    write_module,
)

from harness.agents.protocol import AgentSurface
from harness.expectations.registry import grade
from harness.model_boundary import Handoff
from harness.run_record import RunRecord

# A triage agent handing off to one of two specialists: the graph admission knows.
GRAPH = AgentSurface(
    "triage-graph",
    frozenset({"echo", "fail"}),
    {"triage": frozenset(), "billing": frozenset({"echo"}), "faq_agent": frozenset({"fail"})},
)


def handed(*targets: str, final: str | None = None) -> RunRecord:
    handoffs = [Handoff(0, i, "triage", target) for i, target in enumerate(targets)]
    return RunRecord(final_response="Done", handoffs=handoffs, final_agent=final)


# --- grades ---------------------------------------------------------------------------------


def test_handoffs_passes_on_the_exact_ordered_list() -> None:
    g = only(grade(expects(handoffs=["billing", "faq_agent"]), handed("billing", "faq_agent")))
    assert shape_at(g) == (
        'handoffs(["billing", "faq_agent"])',
        True,
        'handed to ["billing", "faq_agent"]',
        "agent",
        "$.expects.handoffs",
    )


@pytest.mark.parametrize(
    ("made", "shown"),
    [
        (("faq_agent",), '["faq_agent"]'),  # the wrong specialist
        ((), "[]"),  # a triage agent that answered itself
        (("billing", "billing"), '["billing", "billing"]'),  # one too many
    ],
)
def test_handoffs_fails_naming_what_the_run_handed_to(made: tuple[str, ...], shown: str) -> None:
    g = only(grade(expects(handoffs=["billing"]), handed(*made)))
    assert not g.passed
    assert g.detail == f'handoffs: expected ["billing"], the run handed to {shown}'


def test_handoffs_order_matters() -> None:
    g = only(grade(expects(handoffs=["billing", "faq_agent"]), handed("faq_agent", "billing")))
    assert not g.passed


def test_no_handoff_asserted_with_an_empty_list() -> None:
    assert only(grade(expects(handoffs=[]), handed())).detail == "no handoff"
    bad = only(grade(expects(handoffs=[]), handed("billing")))
    assert (bad.passed, bad.detail) == (
        False,
        'handoffs: expected [], the run handed to ["billing"]',
    )


def test_final_agent_both_polarities() -> None:
    ok = only(grade(expects(final_agent="billing"), handed("billing", final="billing")))
    assert shape_at(ok) == (
        'final_agent("billing")',
        True,
        "answered last",
        "agent",
        "$.expects.final_agent",
    )
    bad = only(grade(expects(final_agent="billing"), handed("faq_agent", final="faq_agent")))
    assert (bad.passed, bad.detail) == (False, 'the last answer came from "faq_agent"')
    none = only(grade(expects(final_agent="billing"), handed()))
    assert not none.passed
    assert "none was recorded" in none.detail


# --- admission ------------------------------------------------------------------------------


def test_an_unknown_agent_is_refused_with_did_you_mean_when_the_graph_is_known(
    tmp_path: Path,
) -> None:
    data = replay_trace()
    data["expects"]["handoffs"] = ["billing", "faq"]
    refuse_one(
        tmp_path,
        data,
        "$.expects.handoffs[1]",
        "'faq' is not an agent of triage-graph (did you mean faq_agent?); its agents: "
        "billing, faq_agent, triage",
        agent=GRAPH,
    )


def test_an_unknown_final_agent_is_refused(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"]["final_agent"] = "biling"
    refuse_one(
        tmp_path,
        data,
        "$.expects.final_agent",
        "'biling' is not an agent of triage-graph (did you mean billing?); its agents: "
        "billing, faq_agent, triage",
        agent=GRAPH,
    )


def test_known_agents_are_admitted_and_any_name_is_when_the_graph_is_unknown(
    tmp_path: Path,
) -> None:
    data = replay_trace()
    data["expects"].update(handoffs=["billing"], final_agent="billing")
    assert admit(write_fixture(tmp_path, "a.json", data), agent=GRAPH).trace.expects is not None
    # An own loop's graph is not known at admission: its names are taken as they are.
    data["expects"].update(handoffs=["anyone"], final_agent="anyone")
    path = write_fixture(tmp_path, "b.json", data)
    assert admit(path, agent=BUILTIN_SURFACE).trace.expects is not None


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("handoffs", ["billing", " "], "$.expects.handoffs[1]"),
        ("final_agent", "", "$.expects.final_agent"),
    ],
)
def test_a_blank_agent_name_is_refused(
    tmp_path: Path, field: str, value: object, path: str
) -> None:
    data = replay_trace()
    data["expects"][field] = value
    refuse_one(tmp_path, data, path, "empty or whitespace-only agent name")


def test_an_agent_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"]["final_agent"] = "bill\u202eing"
    refuse_one(
        tmp_path,
        data,
        "$.expects.final_agent",
        "agent name 'bill\\u202eing' holds control or format characters (\\u202e): they can "
        "forge, hide or reorder what reports and terminals show",
    )


def test_no_handoff_alone_is_refused_as_passing_the_empty_run(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"] = {"handoffs": []}
    refuse_one(
        tmp_path,
        data,
        "$.expects",
        "every check passes against an empty run (no response, no tool calls): add a check "
        "only a working agent satisfies",
    )
    # With a companion check only a working agent satisfies, it is admitted.
    data["expects"]["response_contains"] = ["hello"]
    assert admit(write_fixture(tmp_path, "ok.json", data)).trace.expects is not None


# --- through a real run ---------------------------------------------------------------------

# An own loop: `triage` hands the turn to the agent named in the user's input, which answers.
ROUTING_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        target = user_input.split()[-1]
        asked = Message(role="user", content=user_input)
        routed = await self.ctx.model.respond(ModelRequest(messages=(asked,), agent="triage"))
        self.ctx.model.handoff("triage", target)
        # A handoff passes the whole history on, as replay conformance holds it to.
        history = (asked, Message(role="assistant", content=routed.text))
        return (await self.ctx.model.respond(ModelRequest(messages=history, agent=target))).text


def factory(ctx):
    return Session(ctx)
"""


def test_a_handoff_to_the_wrong_agent_fails_the_case_naming_it(
    run_cli: Cli, tmp_path: Path
) -> None:
    steps = [text_step("routing"), text_step("Done")]
    cases = {}
    for name, target in (("right", "billing"), ("wrong", "faq_agent")):
        cases[f"{name}.json"] = fixture(
            name,
            [{"user_input": f"Refund me, {target}", "steps": steps}],
            {
                "response_contains": ["Done"],
                "handoffs": ["billing"],
                "final_agent": "billing",
                # A framework hands off through a call its model makes; this loop routes on
                # a text answer, which conformance reads as a handoff no call asked for.
                "loop_exempt": {"dispatches": "the loop routes on a text answer"},
            },
        )
    root = project(tmp_path, cases)
    module = write_module(root, ROUTING_LOOP)
    result = run_cli(
        "eval", "run", "--agent", f"{module}:factory", "--json-report", "r.json", cwd=root
    )
    assert result.returncode == 1, result.stderr
    report = json.loads((root / "r.json").read_text(encoding="utf-8"))
    verdicts = {c["id"]: c for c in report["cases"]}
    assert verdicts["right"]["passed"] is True, verdicts["right"]["grades"]
    failed = {g["check"]: g["detail"] for g in verdicts["wrong"]["grades"] if not g["passed"]}
    assert failed == {
        'handoffs(["billing"])': 'handoffs: expected ["billing"], the run handed to ["faq_agent"]',
        'final_agent("billing")': 'the last answer came from "faq_agent"',
    }
