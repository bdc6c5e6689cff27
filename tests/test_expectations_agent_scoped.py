"""`harness.expectations.agent_scoped`: `expects.agents.<name>`, the dispatch checks of one
agent of a graph, admitted by the dispatch kinds' own rules and graded over its calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import admit, expects, recorded, refuse_one, refused, replay_trace, write_fixture

from harness.agents.protocol import AgentSurface
from harness.expectations.registry import grade
from harness.run_record import RunRecord
from harness.tool_registry import RecordedCall

GRAPH = AgentSurface(
    "triage-graph",
    frozenset({"echo", "fail", "read_file"}),
    {"triage": frozenset({"read_file"}), "billing": frozenset({"echo"}), "faq": frozenset()},
)


def by(agent: str | None, name: str, **arguments: Any) -> RecordedCall:
    call = recorded(name, arguments, result=f"{name} by {agent}")
    return msgspec.structs.replace(call, agent=agent)


# triage reads a file, billing echoes twice.
RUN = RunRecord(
    final_response="Done",
    calls=[
        by("triage", "read_file", path="a.txt"),
        by("billing", "echo", message="A-1"),
        by("billing", "echo", message="A-2"),
    ],
)


def scoped(agent: str, **checks: Any) -> dict[str, Any]:
    return {"agents": {agent: checks}}


# --- grades ---------------------------------------------------------------------------------


def test_tools_used_counts_only_the_agents_own_calls() -> None:
    ok, bad = grade(expects(**scoped("billing", tools_used=["echo", "read_file"])), RUN)
    assert (ok.check, ok.passed, ok.field) == (
        'agents["billing"].tools_used("echo")',
        True,
        "$.expects.agents.billing.tools_used[0]",
    )
    # read_file was called, but by triage: not billing's call.
    assert (bad.passed, bad.detail) == (False, 'not called; tools called: ["echo", "echo"]')
    assert bad.field == "$.expects.agents.billing.tools_used[1]"


def test_tools_not_used_holds_for_another_agents_call() -> None:
    (g,) = grade(expects(**scoped("billing", tools_not_used=["read_file"])), RUN)
    assert (g.check, g.passed) == ('agents["billing"].tools_not_used("read_file")', True)
    (g,) = grade(expects(**scoped("triage", tools_not_used=["read_file"])), RUN)
    assert (g.passed, g.detail) == (False, 'unexpectedly called; 1 tool call(s): ["read_file"]')


@pytest.mark.parametrize(
    ("agent", "field", "bound", "passed", "detail"),
    [
        ("billing", "max_tool_calls", 1, False, '2 tool call(s): ["echo", "echo"]'),
        ("billing", "exact_tool_calls", 2, True, '2 tool call(s): ["echo", "echo"]'),
        ("triage", "exact_tool_calls", 1, True, '1 tool call(s): ["read_file"]'),
        ("faq", "min_tool_calls", 1, False, "0 tool call(s): []"),
    ],
)
def test_call_counts_are_the_agents(
    agent: str, field: str, bound: int, passed: bool, detail: str
) -> None:
    (g,) = grade(expects(**scoped(agent, **{field: bound})), RUN)
    assert (g.check, g.passed, g.detail) == (
        f'agents["{agent}"].{field}({bound})',
        passed,
        detail,
    )
    assert g.field == f"$.expects.agents.{agent}.{field}"


def test_payload_checks_read_the_agents_calls_and_count_call_index_among_them() -> None:
    checks = {
        "tool_arguments_contain": [{"tool": "echo", "needle": "A-2", "call_index": 1}],
        "tool_results_contain": [{"tool": "read_file", "needle": "by triage"}],
    }
    args, results = grade(expects(**scoped("billing", **checks)), RUN)
    assert (args.check, args.passed, args.detail) == (
        'agents["billing"].tool_arguments_contain("echo"[1], "A-2")',
        True,
        "found in call 1",
    )
    assert args.field == "$.expects.agents.billing.tool_arguments_contain[0]"
    assert (results.passed, results.detail) == (
        False,
        '"read_file" was never called; tools called: ["echo", "echo"]',
    )


def test_an_agent_name_that_is_no_identifier_keeps_a_quoted_path() -> None:
    (g,) = grade(expects(**scoped("faq agent", min_tool_calls=1)), RUN)
    assert g.field == '$.expects.agents["faq agent"].min_tool_calls'


# --- admission ------------------------------------------------------------------------------


def test_an_unknown_agent_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"].update(scoped("biling", tools_used=["echo"]))
    refuse_one(
        tmp_path,
        data,
        "$.expects.agents.biling",
        "'biling' is not an agent of triage-graph (did you mean billing?); its agents: "
        "billing, faq, triage",
        agent=GRAPH,
    )


def test_an_empty_block_asserts_nothing(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"].update(scoped("billing"))
    refuse_one(
        tmp_path,
        data,
        "$.expects.agents.billing",
        "declares no check: an empty agent block asserts nothing",
        agent=GRAPH,
    )


def test_the_dispatch_kinds_rules_hold_inside_a_block_at_its_paths(tmp_path: Path) -> None:
    data = replay_trace()
    block = {
        "tools_used": [" "],
        "min_tool_calls": 0,
        "tool_results_contain": [{"tool": "echo", "needle": ""}],
        # A typo of billing's own tool: such a check could never fail.
        "tools_not_used": ["ecoh"],
    }
    data["expects"].update({"agents": {"billing": block}})
    path, problems = refused(tmp_path, data, agent=GRAPH)
    at = f"{path}: $.expects.agents.billing"
    assert sorted(problems) == sorted(
        [
            f"{at}.tools_used[0]: empty or whitespace-only entry asserts nothing",
            f"{at}.tools_not_used[0]: 'ecoh' is not a tool of agent 'billing' (did you mean "
            "echo?): a check on a tool it does not have can never fail in replay",
            f"{at}.min_tool_calls: 0 is vacuous: every run makes at least 0 calls",
            f"{at}.tool_results_contain[0].needle: empty needle asserts nothing",
        ]
    )


def test_an_unknown_field_in_a_block_is_a_schema_fault_at_its_path(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"].update(scoped("billing", tool_used=["echo"]))
    path, problems = refused(tmp_path, data, agent=GRAPH)
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}: $.expects.agents.billing.tool_used: ")


def test_a_tool_name_with_control_characters_is_refused_in_a_block(tmp_path: Path) -> None:
    data = replay_trace()
    data["expects"].update(scoped("billing", tools_used=["ec\u200bho"]))
    refuse_one(
        tmp_path,
        data,
        "$.expects.agents.billing.tools_used[0]",
        "tool name 'ec\\u200bho' holds control or format characters (\\u200b): they can "
        "forge, hide or reorder what reports and terminals show",
        agent=GRAPH,
    )


def test_a_block_of_negative_checks_alone_passes_the_empty_run_and_is_refused(
    tmp_path: Path,
) -> None:
    data = replay_trace()
    data["expects"] = scoped("billing", tools_not_used=["fail"], max_tool_calls=1)
    refuse_one(
        tmp_path,
        data,
        "$.expects",
        "every check passes against an empty run (no response, no tool calls): add a check "
        "only a working agent satisfies",
        agent=GRAPH,
    )
    data["expects"] = scoped("billing", tools_used=["echo"], max_tool_calls=1)
    assert admit(write_fixture(tmp_path, "ok.json", data), agent=GRAPH).trace.expects
