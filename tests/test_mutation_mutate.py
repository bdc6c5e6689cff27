"""`harness.mutation.mutate` and `zeroclaw eval mutate`: mutants run through the real agent; the
gate holds when every boundary mutant is killed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    CliResult,
    call,
    case_of,
    echo_fixture,
    fixture,
    greeting_fixture,
    parse_commands,
    text_step,
    tool_step,
    turn,
    write_suite,
)

from harness.agents.protocol import AgentContext
from harness.agents.registry import resolve_within
from harness.fixtures.suite import Case
from harness.mutation.mutants import mutants_of
from harness.mutation.mutate import SCHEMA, Thresholds, mutate
from harness.pipeline import RunOptions
from harness.run.runner import CasePlan, replay_backend
from harness.run.watchdog import run_watched
from harness.verdict.reports import CaseReport

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("agent", ["openai-agents", "pydantic-ai"])
def test_the_regression_suite_kills_every_boundary_mutant(agent: str) -> None:
    report = mutate(RunOptions(REPO / "evals" / "regression", agent=agent, root=REPO))
    survivors = [
        (c.id, m.name)
        for c in report.cases
        for m in c.mutants
        if m.family == "boundary" and not m.killed
    ]
    assert survivors == []
    assert report.boundary.generated > 30 and report.exit_code == 0
    assert all(c.baseline_passed for c in report.cases)


@pytest.fixture
def without_conformance(monkeypatch: pytest.MonkeyPatch) -> None:
    # The harness as it was before replay conformance: nothing looked at what the agent
    # sent the model, so only the declared checks can kill a boundary mutant.
    from harness.expectations import loop_conformance

    monkeypatch.setattr(loop_conformance, "RULES", {})


def weak_suite(tmp_path: Path) -> Path:
    # Checks only the final text: without conformance, a loop that dispatches twice or
    # never passes tool results back passes it.
    data = echo_fixture("weak")
    data["expects"] = {"response_contains": ["hello"]}
    return write_suite(tmp_path / "evals" / "regression", {"weak.json": data})


@pytest.mark.usefixtures("without_conformance")
def test_a_weak_case_lets_boundary_mutants_survive_and_fails_the_gate(tmp_path: Path) -> None:
    report = mutate(RunOptions(weak_suite(tmp_path), root=tmp_path))
    (case,) = report.cases
    survivors = {m.name for m in case.mutants if not m.killed}
    assert {"dispatch_twice", "drop_tool_results"} <= survivors
    assert "change_final_text" not in survivors  # the one thing it checks
    assert report.boundary.percent < 100 and report.exit_code == 1
    lenient = mutate(RunOptions(weak_suite(tmp_path / "b"), root=tmp_path / "b"), Thresholds(0.0))
    assert lenient.exit_code == 0


def test_a_case_failing_unmutated_runs_no_mutant_and_fails(tmp_path: Path) -> None:
    data = fixture("red", [turn("hi", text_step("nope"))], {"response_contains": ["yes"]})
    suite = write_suite(tmp_path / "s", {"red.json": data})
    report = mutate(RunOptions(suite, root=tmp_path))
    (case,) = report.cases
    assert not case.baseline_passed and case.mutants == []
    assert report.exit_code == 1


def test_conformance_kills_what_the_weak_case_lets_through(tmp_path: Path) -> None:
    report = mutate(RunOptions(weak_suite(tmp_path), root=tmp_path))
    (case,) = report.cases
    assert case.killed("boundary") == (4, 4) and report.exit_code == 0


def test_mutate_refuses_live_mode(run_cli: Cli, tmp_path: Path) -> None:
    weak_suite(tmp_path)
    result = run_cli(
        "eval", "mutate", "--suite", "evals/regression", "--mode", "live", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "--mode live does not apply" in result.stderr


@pytest.mark.usefixtures("without_conformance")
def test_the_command_prints_scores_and_survivors_and_writes_the_report(
    run_cli: Cli, tmp_path: Path
) -> None:
    weak_suite(tmp_path)
    result = run_cli(
        "eval",
        "mutate",
        "--suite",
        "evals/regression",
        "--json-report",
        "out/mutation.json",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert "    boundary dispatch_twice  weak (evals/regression/weak.json:" in result.stdout
    assert "mutation score: boundary" in result.stdout
    document = json.loads((tmp_path / "out" / "mutation.json").read_text("utf-8"))
    assert document["schema"] == SCHEMA and document["exit_code"] == 1
    (case,) = document["cases"]
    assert {m["name"] for m in case["mutants"]} >= {"dispatch_twice", "change_final_text"}
    assert {s["name"]: s["reason"] for s in case["not_generated"]}[
        "drop_history"
    ] == "one turn only"
    ok = run_cli("eval", "mutate", "--suite", "evals/regression", "--min-score", "0", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout
    bad = run_cli("eval", "mutate", "--min-score", "101", cwd=tmp_path)
    assert bad.returncode == 2


@pytest.mark.usefixtures("without_conformance")
def test_what_was_not_generated_is_one_block_by_reason_and_survivors_close_the_table(
    run_cli: Cli, tmp_path: Path
) -> None:
    weak_suite(tmp_path)
    greetings: dict[str, dict[str, Any] | str] = {
        f"g{i}.json": greeting_fixture(f"greet-{i}") for i in range(3)
    }
    write_suite(tmp_path / "evals" / "regression", greetings)
    result = run_cli("eval", "mutate", "--suite", "evals/regression", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    # Each reason once, for every case it held in: four one-turn cases, two mutants each.
    assert [line for line in lines if "one turn only" in line] == [
        "     8 in 4 case(s)  one turn only: drop_last_turn, drop_history"
    ]
    assert sum("not generated" in line for line in lines) == 1
    cases = [i for i, line in enumerate(lines) if line.startswith(("  ✓ ", "  ✗ "))]
    block = lines.index("  not generated: 54 mutant(s), by reason (--json-report names the cases)")
    survived = lines.index("  survived: 6 mutant(s) no check of their case noticed")
    score = next(i for i, line in enumerate(lines) if "mutation score" in line)
    assert len(cases) == 4 and max(cases) < block < survived < score
    survivors = lines[survived + 1 : score - 1]
    assert len(survivors) == 6 and all(" weak (evals/regression/weak.json:" in s for s in survivors)


def test_mutating_a_two_step_tool_case(tmp_path: Path) -> None:
    data = fixture(
        "two",
        [
            turn(
                "go",
                tool_step(call("c1", message="a")),
                tool_step(call("c2", message="b")),
                text_step("a b"),
            )
        ],
        {
            "response_contains": ["a b"],
            "tool_arguments_contain": [{"tool": "echo", "needle": "a", "call_index": 0}],
        },
    )
    report = mutate(RunOptions(write_suite(tmp_path / "s", {"two.json": data}), root=tmp_path))
    (case,) = report.cases
    assert case.killed("boundary") == (4, 4)
    killed = {m.name: m.by for m in case.mutants if m.killed}
    assert killed["dispatch_twice"].startswith("loop(dispatches)")


FORGED = "\n::error::forged ##[error]legacy"


def hostile_suite(tmp_path: Path, reason: str = "why" + FORGED) -> Path:
    # Everything a fork's fixture may put where mutate prints it: a call id and an argument
    # key (in survivors' descriptions), an exemption's reason (why a mutant is not
    # generated), a case id and a file name (`##[` only: admission refuses a line break
    # there).
    hostile_call = {"id": "c1" + FORGED, "name": "echo", "arguments": {"message" + FORGED: "hi"}}
    data = fixture(
        "hostile ##[error]id",
        [turn("go", tool_step(hostile_call), text_step("hi"))],
        {"response_contains": ["hi"], "loop_exempt": {"history": reason}},
    )
    # ASCII JSON: a lone surrogate escaped, as a file can hold one.
    return write_suite(tmp_path / "evals" / "regression", {"h ##[x].json": json.dumps(data)})


def mutate_cli(run_cli: Cli, root: Path, env: dict[str, str] | None = None) -> CliResult:
    argv = ("eval", "mutate", "--suite", "evals/regression", "--json-report", "mutation.json")
    return run_cli(*argv, cwd=root, env=env)


@pytest.mark.parametrize("on_github", [False, True])
def test_hostile_fixture_text_forges_no_workflow_command(
    run_cli: Cli, tmp_path: Path, on_github: bool
) -> None:
    hostile_suite(tmp_path)
    result = mutate_cli(run_cli, tmp_path, {"GITHUB_ACTIONS": "true"} if on_github else {})
    assert result.returncode == 0, result.stderr
    assert "drop_tool_call" in result.stdout  # a survivor, its description shown
    commands = [c.name for c in parse_commands(result.stdout)]
    # On GitHub the table is also fenced: the runner acts on nothing between the two.
    assert commands == (["stop-commands", commands[-1]] if on_github else [])
    assert parse_commands(result.stderr) == []
    assert "##[" not in result.stdout + result.stderr
    raw = (tmp_path / "mutation.json").read_text("utf-8")
    assert "##[" not in raw and parse_commands(raw) == []
    (case,) = json.loads(raw)["cases"]
    # Escaped, not changed: the report keeps the fixture's exact text.
    assert case["id"] == "hostile ##[error]id"
    described = {m["name"]: m["description"] for m in case["mutants"]}
    assert described["drop_tool_call"] == f"drop the call c1{FORGED} (echo)"
    reasons = {s["name"]: s["reason"] for s in case["not_generated"]}
    assert reasons["drop_history"] == f"the case is exempt from loop(history): why{FORGED}"


def test_a_lone_surrogate_in_a_fixture_is_reported_not_a_traceback(
    run_cli: Cli, tmp_path: Path
) -> None:
    hostile_suite(tmp_path, reason="why \ud800")
    result = mutate_cli(run_cli, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "exempt from loop(history): why \ufffd" in result.stdout
    (case,) = json.loads((tmp_path / "mutation.json").read_bytes())["cases"]
    reasons = {s["name"]: s["reason"] for s in case["not_generated"]}
    assert reasons["drop_history"] == "the case is exempt from loop(history): why \ufffd"


# --- multi-agent graphs: the examples ------------------------------------------------------

TRIAGE_SPEC = "openai-agents:triage_agents:build_agent"
BOOKING_SPEC = "pydantic-ai:flight_booking:booking_agent"
ORCHESTRATOR_SPEC = "openai-agents:travel_desk:build_agent"
NESTED_RUN_SPEC = "openai-agents:bookshop:build_agent"
REFUNDS_SDK_SPEC = "openai-agents:sdk_refunds:build_agent"
REFUNDS_PAI_SPEC = "pydantic-ai:pydantic_refunds:build_agent"
EXAMPLES = {
    TRIAGE_SPEC: REPO / "examples" / "openai_agents_triage",
    BOOKING_SPEC: REPO / "examples" / "pydantic_ai_delegation",
    ORCHESTRATOR_SPEC: REPO / "examples" / "openai_agents_orchestrator",
    NESTED_RUN_SPEC: REPO / "examples" / "openai_agents_nested_run",
    REFUNDS_SDK_SPEC: REPO / "examples" / "approval_refunds",
    REFUNDS_PAI_SPEC: REPO / "examples" / "approval_refunds",
}


def on_path(spec: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example's directory, importable as its README runs it (from that directory)."""
    pytest.importorskip(spec.split(":")[0].replace("-", "_").replace("openai_", ""))
    monkeypatch.syspath_prepend(str(EXAMPLES[spec]))
    return EXAMPLES[spec]


def run_mutant(spec: str, fixture_name: str, name: str, root: Path) -> CaseReport:
    """One boundary mutant of an example's case, run through the real agent. The case's
    loop exemptions are dropped first, so every mutant is generated; the record, not the
    verdict, is what the caller looks at."""
    data = json.loads((root / "evals" / fixture_name).read_text("utf-8"))
    data["expects"].pop("loop_exempt", None)
    (mutant,) = (m for m in mutants_of(case_of(data), True).generated if m.name == name)
    adapter, surface = resolve_within(spec, 30.0)

    def prepare(_case: Case, context: AgentContext) -> None:
        assert mutant.prepare is not None
        mutant.prepare(context)

    plan = CasePlan(
        adapter, "replay", replay_backend, None, 30.0, root, surface.tools, prepare=prepare
    )
    (report,) = run_watched([mutant.case], plan, None)
    return report


@pytest.mark.parametrize(
    ("spec", "fixture_name", "nested"),
    [
        (TRIAGE_SPEC, "billing_invoice_lookup.json", ("lookup_invoice", "billing_agent")),
        (BOOKING_SPEC, "search_then_book.json", ("find_flights", "flight_search")),
    ],
)
def test_a_dispatch_fault_reaches_the_tools_of_the_nested_agents(
    spec: str, fixture_name: str, nested: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The specialist after a handoff and the delegate run their own tools, which the
    # framework dispatches: the fault must reach those as it reaches the harness's.
    root = on_path(spec, monkeypatch)
    report = run_mutant(spec, fixture_name, "dispatch_twice", root)
    assert report.record is not None
    calls = [(c.name, c.agent) for c in report.record.calls]
    assert calls.count(nested) == 2, calls


def test_a_frameworks_own_tools_get_the_dispatch_faults(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's agent brings its own tools, which the framework runs: they were left out
    # as tools the harness could not fault.
    on_path(BOOKING_SPEC, monkeypatch)
    data = fixture(
        "book-directly",
        [
            turn(
                "Book ZC101 for me.",
                tool_step(
                    {"id": "c1", "name": "book_flight", "arguments": {"flight_number": "ZC101"}}
                ),
                text_step("Booked: confirmation B-ZC101."),
            )
        ],
        {
            "exact_tool_calls": 1,
            "tool_results_contain": [{"tool": "book_flight", "needle": "B-ZC101"}],
            "response_contains": ["B-ZC101"],
        },
    )
    write_suite(tmp_path / "evals", {"book.json": data})
    argv = ("eval", "mutate", "--suite", "evals", "--agent", BOOKING_SPEC)
    result = run_cli(*argv, "--json-report", "m.json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (case,) = json.loads((tmp_path / "m.json").read_text("utf-8"))["cases"]
    killed = {m["name"]: m["killed"] for m in case["mutants"] if m["family"] == "boundary"}
    assert killed == {
        "drop_tool_results": True,
        "drop_call_ids": True,
        "dispatch_twice": True,
        "skip_call": True,
        # No snapshot in this project: the agent's declared instructions are what kill it.
        "drop_instructions": True,
    }


def mutate_example(run_cli: Cli, spec: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """`zeroclaw eval mutate` on an example's suite, run as its README runs the suite."""
    root = on_path(spec, monkeypatch)
    argv = ("eval", "mutate", "--suite", "evals", "--agent", spec, "--json-report")
    result = run_cli(*argv, str(tmp_path / "mutation.json"), cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((tmp_path / "mutation.json").read_text("utf-8"))


def boundary_survivors(document: Any) -> list[tuple[str, str]]:
    return [
        (case["id"], m["name"])
        for case in document["cases"]
        for m in case["mutants"]
        if m["family"] == "boundary" and not m["killed"]
    ]


def test_the_triage_suite_kills_every_boundary_mutant_and_each_wrong_handoff(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    document = mutate_example(run_cli, TRIAGE_SPEC, monkeypatch, tmp_path)
    assert boundary_survivors(document) == [] and document["boundary"]["generated"] >= 6
    assert all(case["baseline_passed"] for case in document["cases"])
    # The faults reach the specialists: their requests lose the lookup's result.
    handed = {}
    for case in document["cases"]:
        killed = {m["name"]: m for m in case["mutants"]}
        assert killed["drop_tool_results"]["killed"] or case["id"] == "faq-opening-hours"
        handed[case["id"]] = killed["wrong_handoff"]
    # Every case scripts a handoff triage could make elsewhere: the wrong specialist is
    # taken, and each case notices (faq-opening-hours by who was asked last).
    assert len(handed) == 6 and all(m["killed"] for m in handed.values())
    assert handed["faq-opening-hours"]["description"] == (
        "call_to_faq hands off to billing_agent, not faq_agent"
    )


def test_the_delegation_suite_kills_every_boundary_mutant_and_has_no_handoff_to_change(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    document = mutate_example(run_cli, BOOKING_SPEC, monkeypatch, tmp_path)
    assert boundary_survivors(document) == []
    assert all(case["baseline_passed"] for case in document["cases"])
    for case in document["cases"]:
        reasons = {s["name"]: s["reason"] for s in case["not_generated"]}
        # Delegation comes back to the booking agent: it is a tool call, not a handoff.
        assert reasons["wrong_handoff"] == "the agent hands off to no other agent"


def test_the_orchestrator_suite_kills_every_boundary_mutant_inside_the_agents_it_uses(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    document = mutate_example(run_cli, ORCHESTRATOR_SPEC, monkeypatch, tmp_path)
    assert boundary_survivors(document) == [] and document["boundary"]["generated"] >= 15
    assert all(case["baseline_passed"] for case in document["cases"])
    # The weather agent, used as a tool, loses its forecast under the fault: each case
    # that asks it notices.
    weather = [c for c in document["cases"] if "weather" in c["id"]]
    assert weather and all(
        m["killed"] for c in weather for m in c["mutants"] if m["name"] == "drop_tool_results"
    )


def test_the_nested_run_suite_kills_every_boundary_mutant_inside_the_agent_a_tool_runs(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    document = mutate_example(run_cli, NESTED_RUN_SPEC, monkeypatch, tmp_path)
    assert boundary_survivors(document) == [] and document["boundary"]["generated"] >= 10
    assert all(case["baseline_passed"] for case in document["cases"])
    # The stock agent, run by the tool's own code, loses its shelf lookup under the fault:
    # each case that asks it notices.
    asking = [c for c in document["cases"] if c["id"] != "opening-hours-answered-directly"]
    assert len(asking) == 3 and all(
        m["killed"] for c in asking for m in c["mutants"] if m["name"] == "drop_tool_results"
    )


@pytest.mark.parametrize("spec", [REFUNDS_SDK_SPEC, REFUNDS_PAI_SPEC])
def test_the_approval_suite_kills_every_boundary_mutant_and_faults_no_rejected_call(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spec: str
) -> None:
    document = mutate_example(run_cli, spec, monkeypatch, tmp_path)
    assert boundary_survivors(document) == [] and document["boundary"]["generated"] >= 6
    assert all(case["baseline_passed"] for case in document["cases"])
    # The rejected refund is never dispatched: no dispatch fault could reach it.
    (rejected,) = (c for c in document["cases"] if c["id"] == "rejected-refund-not-made")
    reasons = {s["name"]: s["reason"] for s in rejected["not_generated"]}
    assert reasons["skip_call"] == (
        "every scripted call is rejected for approval (or a handoff): none is dispatched"
    )
    assert {m["name"] for m in rejected["mutants"]}.isdisjoint({"skip_call", "dispatch_twice"})


# --- judge mutants: bad answers for the rubrics to catch ------------------------------------

JUDGE_KEY_ENV = "ZC_MUTATE_JUDGE_KEY"
CAPITAL = {"name": "names-capital", "rubric": "The answer names the capital.", "threshold": 0.5}


def judged_suite(tmp_path: Path, base_url: str) -> Path:
    """A suite of one case graded by its rubric (the fair loopback judge passes an answer
    naming Paris), its rubric calibrated to gate."""
    import msgspec

    from harness.expectations.judge import Rubric
    from harness.judge.calibration import CalibrationFile, Confusion, calibrated
    from harness.judge.service import JudgeSetup

    answer = "The capital of France is Paris (2.1 million people)."
    data = fixture(
        "capital", [turn("Capital of France?", text_step(answer))],
        {"max_tool_calls": 0, "judge": [CAPITAL]},
    )  # fmt: skip
    write_suite(tmp_path / "evals" / "regression", {"capital.json": data})
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\n'
        f'judge_base_url = "{base_url}"\njudge_model = "judge-model"\n'
        f'judge_api_key_env = "{JUDGE_KEY_ENV}"\n',
        encoding="utf-8",
    )
    setup = JudgeSetup(base_url, "judge-model").setup_hash(msgspec.convert(CAPITAL, Rubric))
    entry = calibrated("names-capital", setup, Confusion(jp_hp=24, jp_hf=1, jf_hp=1, jf_hf=24))
    folder = tmp_path / "evals" / "regression" / "judge"
    folder.mkdir()
    (folder / "calibration.json").write_bytes(
        msgspec.json.encode(CalibrationFile(rubrics={"names-capital": entry}))
    )
    return tmp_path


def judge_mutants(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [case] = report["cases"]
    return {m["name"]: m for m in case["mutants"] if m["family"] == "judge"}


def test_judge_mutants_unrecorded_are_not_judged_then_recorded_and_replayed(
    run_cli: Cli, tmp_path: Path
) -> None:
    from _judge_server import fair
    from _openai_server import OpenAIServer

    env = {JUDGE_KEY_ENV: "sk-judge"}
    with OpenAIServer(responder=fair) as server:
        root = judged_suite(tmp_path, server.base_url)
        assert run_cli("eval", "run", "--record-judge", cwd=root, env=env).returncode == 0
        asked = len(server.requests)
        unrecorded = run_cli("eval", "mutate", "--json-report", "m.json", cwd=root)
        # Replay never calls: the bad answers' verdicts are not recorded, so not judged.
        assert len(server.requests) == asked
        first = json.loads((root / "m.json").read_text("utf-8"))
        # change_final_text too: only its unrecorded judge check failed it, no kill shown.
        assert first["judge"] == {"killed": 0, "generated": 0} and first["not_judged"] == 4
        assert first["script"] == {"killed": 0, "generated": 0}
        assert all(not m["killed"] and not m["judged"] for m in judge_mutants(first).values())
        assert "4 mutant(s) not judged" in unrecorded.stdout
        assert "--record-judge" in unrecorded.stdout
        recorded = run_cli(
            "eval", "mutate", "--record-judge", "--json-report", "m.json", cwd=root, env=env
        )
        # The three judge mutants' answers and change_final_text's.
        assert "recorded 4 judge repl(ies)" in recorded.stderr
    # Offline now: the bad answers' verdicts replay.
    again = run_cli("eval", "mutate", "--json-report", "m.json", cwd=root)
    report = json.loads((root / "m.json").read_text("utf-8"))
    assert report["judge"] == {"killed": 2, "generated": 3} and report["not_judged"] == 0
    found = judge_mutants(report)
    assert found["judge_unhelpful"]["killed"] and found["judge_off_task"]["killed"]
    assert 'judge("names-capital")' in found["judge_off_task"]["by"]
    # Wrong figures still name Paris: this rubric cannot see them, and the table says so.
    assert not found["judge_wrong"]["killed"] and found["judge_wrong"]["judged"]
    assert "judge mutants: 2/3 bad answer(s) caught by the rubrics" in again.stdout
    assert "judge judge_wrong" in again.stdout  # listed among the survivors


def test_a_case_without_rubrics_gets_no_judge_mutant(tmp_path: Path) -> None:
    case = case_of(echo_fixture("echo-case"))
    assert not [m for m in mutants_of(case, True).generated if m.family == "judge"]
    assert not [s for s in mutants_of(case, True).skipped if s.family == "judge"]


@pytest.mark.parametrize(("spec", "minimum"), [(TRIAGE_SPEC, 6), (BOOKING_SPEC, 3)])
def test_the_committed_snapshots_kill_dropped_instructions_and_a_changed_schema(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spec: str, minimum: int
) -> None:
    document = mutate_example(run_cli, spec, monkeypatch, tmp_path)
    shown = [
        m
        for case in document["cases"]
        for m in case["mutants"]
        if m["name"] in {"drop_instructions", "change_tool_schema"}
    ]
    assert len(shown) >= 2 * minimum
    assert all(m["killed"] for m in shown), shown
    # The snapshot notices every one (another check may have noticed first).
    assert any(m["by"].startswith("request_snapshot") for m in shown), shown


@pytest.mark.parametrize("spec", [TRIAGE_SPEC, BOOKING_SPEC])
def test_with_snapshots_off_the_conformance_rule_kills_dropped_instructions(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spec: str
) -> None:
    root = on_path(spec, monkeypatch)
    report = tmp_path / "mutation.json"
    argv = ("eval", "mutate", "--suite", "evals", "--agent", spec, "--snapshots", "off")
    result = run_cli(*argv, "--json-report", str(report), cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(report.read_text("utf-8"))
    dropped = [
        m for c in document["cases"] for m in c["mutants"] if m["name"] == "drop_instructions"
    ]
    assert len(dropped) == len(document["cases"])
    assert all(m["killed"] for m in dropped), dropped
    # The rule kills it; a case checking a system message itself may have said so first.
    others = [m["by"] for m in dropped if not m["by"].startswith("loop(instructions)")]
    assert all("more failing check" in by for by in others), others
    # Without a snapshot nothing else sees a changed schema or changed settings.
    skipped = {s["name"] for c in document["cases"] for s in c["not_generated"]}
    assert {"change_tool_schema", "change_model_settings"} <= skipped
