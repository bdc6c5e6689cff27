"""`harness.expectations.trajectory`: a trajectory of expected calls in each mode, matched by
an optimal assignment (cases where greedy first fit gives the wrong verdict included), the
alignment in its detail, strict admission, and a real run graded by it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import (
    EMPTY_RUN,
    Cli,
    admit,
    call,
    expects,
    fixture,
    only,
    project,
    record,
    recorded,
    refuse_one,
    refused,
    replay_trace,
    text_step,
    tool_step,
    turn,
    write_fixture,
)

from harness.agents.protocol import AgentSurface
from harness.expectations.registry import grade
from harness.expectations.trajectory import MAX_ACTUAL, MAX_EXPECTED
from harness.tool_registry import RecordedCall


def traj(mode: str, *calls: dict[str, Any]) -> Any:
    return expects(trajectory={"mode": mode, "calls": list(calls)})


def echo(message: str, agent: str | None = None) -> RecordedCall:
    made = recorded("echo", {"message": message}, message)
    return made if agent is None else msgspec.structs.replace(made, agent=agent)


def verdict(mode: str, calls: list[RecordedCall], *expected: dict[str, Any]) -> tuple[bool, str]:
    g = only(grade(traj(mode, *expected), record("done", calls)))
    assert g.field == "$.expects.trajectory"
    assert g.category == "tool"
    return g.passed, g.detail


# Greedy first fit takes, for the needle entry, the first call it matches ("a"), leaving the
# exact entry nothing; the optimal assignment gives the needle "ab" and the exact entry "a".
LOOSE = {"tool": "echo", "arguments_contain": "a"}
TIGHT = {"tool": "echo", "arguments": {"message": "a"}}
GREEDY_TRAP = [echo("a"), echo("ab")]


# --- modes ----------------------------------------------------------------------------------


def test_strict_passes_on_exactly_these_calls_in_this_order() -> None:
    ok, detail = verdict(
        "strict", [echo("a"), recorded("fail")], {"tool": "echo"}, {"tool": "fail"}
    )
    assert ok
    assert detail == (
        '2 of 2 expected call(s) matched 2 recorded: [0] "echo" = call 0; [1] "fail" = call 1'
    )


def test_strict_fails_on_another_order_and_says_the_calls_match_in_it() -> None:
    ok, detail = verdict(
        "strict", [recorded("fail"), echo("a")], {"tool": "echo"}, {"tool": "fail"}
    )
    assert not ok
    assert detail == (
        '1 of 2 expected call(s) matched 2 recorded; matched: [1] "fail" = call 0; '
        'missing: [0] "echo"; extra: call 1 "echo"({"message":"a"}); '
        "every call matches in another order (strict asks for this one)"
    )


def test_strict_fails_on_a_missing_and_on_an_extra_call() -> None:
    ok, detail = verdict("strict", [echo("a")], {"tool": "echo"}, {"tool": "fail"})
    assert (ok, detail) == (
        False,
        '1 of 2 expected call(s) matched 1 recorded; matched: [0] "echo" = call 0; '
        'missing: [1] "fail"',
    )
    ok, detail = verdict("strict", [echo("a"), echo("b")], {"tool": "echo"})
    assert not ok
    assert detail.endswith('extra: call 1 "echo"({"message":"b"})')


def test_strict_with_no_calls_passes_only_a_run_that_made_none() -> None:
    assert verdict("strict", []) == (
        True,
        "0 of 0 expected call(s) matched 0 recorded: the run made no tool call",
    )
    assert not verdict("strict", [echo("a")])[0]


def test_unordered_passes_in_any_order_but_not_with_an_extra_or_missing_call() -> None:
    expected = ({"tool": "echo"}, {"tool": "fail"})
    assert verdict("unordered", [recorded("fail"), echo("a")], *expected)[0]
    assert not verdict("unordered", [recorded("fail"), echo("a"), echo("b")], *expected)[0]
    ok, detail = verdict("unordered", [recorded("fail")], *expected)
    assert not ok
    assert 'missing: [0] "echo"' in detail


def test_subset_passes_when_every_call_is_one_of_these() -> None:
    expected = ({"tool": "echo"}, {"tool": "fail"}, {"tool": "read_file"})
    ok, detail = verdict("subset", [recorded("fail"), echo("a")], *expected)
    assert ok, detail
    # A call outside the list fails, and each entry covers one call only.
    ok, detail = verdict("subset", [echo("a"), echo("b")], *expected)
    assert not ok
    assert 'extra: call 1 "echo"({"message":"b"})' in detail
    assert 'not called (allowed): [1] "fail"; [2] "read_file"' in detail


def test_superset_passes_when_these_all_happen_among_others() -> None:
    expected = ({"tool": "echo", "arguments": {"message": "b"}},)
    assert verdict("superset", [recorded("fail"), echo("a"), echo("b")], *expected)[0]
    ok, detail = verdict("superset", [echo("a")], *expected)
    assert (ok, detail) == (
        False,
        '0 of 1 expected call(s) matched 1 recorded; missing: [0] "echo" '
        'arguments={"message":"b"}; other calls (allowed): call 0 "echo"({"message":"a"})',
    )


# --- optimal, not greedy --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["unordered", "superset"])
def test_the_assignment_is_optimal_where_greedy_first_fit_fails(mode: str) -> None:
    ok, detail = verdict(mode, GREEDY_TRAP, LOOSE, TIGHT)
    assert ok, detail
    assert detail == (
        '2 of 2 expected call(s) matched 2 recorded: [0] "echo" arguments∋"a" = call 1; '
        '[1] "echo" arguments={"message":"a"} = call 0'
    )


def test_subset_assigns_each_call_an_entry_optimally() -> None:
    # Greedy over the calls gives call 0 ("a") the needle entry, leaving call 1 ("ab") none.
    ok, detail = verdict("subset", GREEDY_TRAP, LOOSE, TIGHT)
    assert ok, detail


def test_an_unmatchable_assignment_still_fails() -> None:
    # Both calls fit only the needle entry: one of them is left over, whatever the order.
    assert not verdict("unordered", [echo("ab"), echo("abc")], LOOSE, TIGHT)[0]


def test_matching_is_bounded_for_hostile_sizes() -> None:
    # Every entry fits every call: the densest graph the bounds allow.
    calls = [echo(str(i)) for i in range(MAX_ACTUAL)]
    expected = [{"tool": "echo"}] * MAX_EXPECTED
    started = time.perf_counter()
    assert verdict("superset", calls, *expected)[0]
    assert not verdict("unordered", calls, *expected)[0]
    assert time.perf_counter() - started < 5
    ok, detail = verdict("superset", [*calls, echo("x")], {"tool": "echo"})
    assert (ok, detail) == (
        False,
        f"the run made {MAX_ACTUAL + 1} tool calls: at most {MAX_ACTUAL} are matched",
    )


# --- arguments and agents -------------------------------------------------------------------


def test_arguments_exactly_by_subset_and_by_needle() -> None:
    call_ = recorded("write_file", {"path": "a.txt", "content": {"n": 1, "m": [1]}})
    fits: dict[str, dict[str, Any]] = {
        "exact": {"arguments": {"path": "a.txt", "content": {"n": 1, "m": [1]}}},
        "subset": {"arguments_subset": {"content": {"n": 1}}},
        "needle": {"arguments_contain": '"path":"a.txt"'},
    }
    misses: dict[str, dict[str, Any]] = {
        "exact": {"arguments": {"path": "a.txt"}},
        "exact-type": {"arguments": {"path": "a.txt", "content": {"n": 1.0, "m": [1]}}},
        "subset": {"arguments_subset": {"content": {"n": True}}},
        "subset-list": {"arguments_subset": {"content": {"m": []}}},
        "needle": {"arguments_contain": "b.txt"},
    }
    for name, how in fits.items():
        assert verdict("strict", [call_], {"tool": "write_file", **how})[0], name
    for name, how in misses.items():
        assert not verdict("strict", [call_], {"tool": "write_file", **how})[0], name


def test_arguments_that_are_not_json_match_no_shape() -> None:
    odd = recorded("echo", "not json")
    assert not verdict("strict", [odd], {"tool": "echo", "arguments_subset": {}})[0]
    assert verdict("strict", [odd], {"tool": "echo", "arguments_contain": "not"})[0]


def test_an_entry_with_an_agent_matches_only_that_agents_calls() -> None:
    calls = [echo("a", agent="billing")]
    assert verdict("strict", calls, {"tool": "echo", "agent": "billing"})[0]
    ok, detail = verdict("strict", calls, {"tool": "echo", "agent": "faq"})
    assert not ok
    assert detail.endswith('extra: call 0 "echo"({"message":"a"}) by "billing"')


# --- admission ------------------------------------------------------------------------------

GRAPH = AgentSurface(
    "triage-graph",
    frozenset({"echo", "fail"}),
    {"triage": frozenset(), "billing": frozenset({"echo"}), "faq_agent": frozenset({"fail"})},
)


def with_trajectory(mode: str, *calls: dict[str, Any]) -> dict[str, Any]:
    data = replay_trace()
    data["expects"]["trajectory"] = {"mode": mode, "calls": list(calls)}
    return data


def test_a_trajectory_is_admitted_and_graded_with_the_others(tmp_path: Path) -> None:
    data = with_trajectory("strict", {"tool": "echo", "arguments": {"message": "hello"}})
    case = admit(write_fixture(tmp_path, "ok.json", data))
    assert case.trace.expects is not None


def test_an_unknown_tool_is_refused_with_did_you_mean(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset", {"tool": "ecoh"}),
        "$.expects.trajectory.calls[0].tool",
        "'ecoh' is not a tool of openai-agents (did you mean echo?); its tools: echo, fail, "
        "list_files, read_file, write_file",
    )


def test_a_tool_is_judged_against_its_agents_own_tools(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset", {"tool": "fail", "agent": "billing"}),
        "$.expects.trajectory.calls[0].tool",
        "'fail' is not a tool of agent 'billing'; its tools: echo",
        agent=GRAPH,
    )


def test_an_unknown_agent_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset", {"tool": "echo", "agent": "biling"}),
        "$.expects.trajectory.calls[0].agent",
        "'biling' is not an agent of triage-graph (did you mean billing?); its agents: "
        "billing, faq_agent, triage",
        agent=GRAPH,
    )


def test_subset_alone_is_refused_as_vacuous(tmp_path: Path) -> None:
    data = with_trajectory("subset", {"tool": "echo"})
    data["expects"] = {"trajectory": data["expects"]["trajectory"]}
    refuse_one(tmp_path, data, "$.expects", EMPTY_RUN)
    # Beside a check only a working agent satisfies, it bounds what the agent may call.
    data["expects"]["response_contains"] = ["hello"]
    assert admit(write_fixture(tmp_path, "ok.json", data)).trace.expects is not None


def test_an_empty_superset_is_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset"),
        "$.expects.trajectory.calls",
        "an empty superset holds for every run: it asserts nothing",
    )


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"tool": " "}, "tool", "empty tool asserts nothing"),
        (
            {"tool": "echo", "arguments_contain": ""},
            "arguments_contain",
            "empty needle asserts nothing",
        ),
        (
            {"tool": "echo", "arguments": {}, "arguments_contain": "x"},
            "arguments_contain",
            "arguments and arguments_contain together: set at most one way of matching the "
            "arguments",
        ),
        (
            {"tool": "echo", "arguments_subset": {"n": 1e999}},
            "arguments_subset",
            "NaN and Infinity are not JSON: no model's arguments can equal them",
        ),
    ],
)
def test_an_entry_that_asserts_nothing_or_too_much_is_refused(
    tmp_path: Path, entry: dict[str, Any], field: str, message: str
) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset", entry),
        f"$.expects.trajectory.calls[0].{field}",
        message,
    )


def test_unknown_keys_and_modes_are_refused(tmp_path: Path) -> None:
    _, problems = refused(tmp_path, with_trajectory("superset", {"tool": "echo", "args": {}}))
    assert len(problems) == 1
    assert "$.expects.trajectory.calls[0].args" in problems[0]
    assert "unknown key" in problems[0]
    _, problems = refused(tmp_path, with_trajectory("ordered", {"tool": "echo"}))
    assert len(problems) == 1
    assert "$.expects.trajectory.mode" in problems[0]


def test_too_many_entries_are_refused(tmp_path: Path) -> None:
    refuse_one(
        tmp_path,
        with_trajectory("superset", *[{"tool": "echo"}] * (MAX_EXPECTED + 1)),
        "$.expects.trajectory.calls",
        f"{MAX_EXPECTED + 1} expected calls: at most {MAX_EXPECTED} are matched",
    )


# --- through a real run ---------------------------------------------------------------------


def test_a_run_in_the_wrong_order_fails_its_strict_trajectory(run_cli: Cli, tmp_path: Path) -> None:
    steps = [
        tool_step(call("c1", message="first")),
        tool_step(call("c2", "write_file", path="out.txt", content="x")),
        text_step("done"),
    ]
    calls = [
        {"tool": "echo", "arguments": {"message": "first"}},
        {"tool": "write_file", "arguments_subset": {"path": "out.txt"}},
    ]
    cases = {
        "right.json": fixture(
            "right",
            [turn("Echo, then write", *steps)],
            {"response_contains": ["done"], "trajectory": {"mode": "strict", "calls": calls}},
        ),
        "wrong.json": fixture(
            "wrong",
            [turn("Echo, then write", *steps)],
            {"response_contains": ["done"], "trajectory": {"mode": "strict", "calls": calls[::-1]}},
        ),
    }
    root = project(tmp_path, cases)
    result = run_cli("eval", "run", "--json-report", "r.json", cwd=root)
    assert result.returncode == 1, result.stderr
    report = json.loads((root / "r.json").read_text(encoding="utf-8"))
    verdicts = {c["id"]: c for c in report["cases"]}
    assert verdicts["right"]["passed"] is True, verdicts["right"]["grades"]
    failed = [g for g in verdicts["wrong"]["grades"] if not g["passed"]]
    assert [g["check"] for g in failed] == ["trajectory(strict, 2 call(s))"]
    assert "every call matches in another order" in failed[0]["detail"]
