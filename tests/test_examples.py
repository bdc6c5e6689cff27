"""The shipped examples: their READMEs' commands run green from the command line, and the
examples keep the rules they teach (no module shadowing a framework, placeholder
identities only, suites that grade the user's own tools at the dispatch boundary)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from conftest import REPO, Cli

EXAMPLES = REPO / "examples"
OWN_LOOP = EXAMPLES / "own_loop"
SUPPORT = EXAMPLES / "support_agent"
DELEGATION = EXAMPLES / "pydantic_ai_delegation"
TRIAGE = EXAMPLES / "openai_agents_triage"
ORCHESTRATOR = EXAMPLES / "openai_agents_orchestrator"
NESTED_RUN = EXAMPLES / "openai_agents_nested_run"
APPROVALS = EXAMPLES / "approval_refunds"
AIRLINE_DESK = EXAMPLES / "openai_agents_airline_desk"
BANK_SUPPORT = EXAMPLES / "pydantic_ai_bank_support"


def readme_commands(example: Path) -> list[list[str]]:
    """The `zeroclaw eval run …` commands of the example's README, as argument lists, after
    checking the README says to run them from the example's own directory."""
    text = (example / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert f"cd examples/{example.name}" in lines
    return [line.split()[1:] for line in lines if line.startswith("zeroclaw eval run")]


def fixtures_of(example: Path) -> list[dict]:
    paths = sorted((example / "evals").glob("*.json"))
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


@pytest.mark.parametrize(
    ("example", "agents", "minimum"),
    [
        (OWN_LOOP, ["loop:factory"], 3),
        (
            SUPPORT,
            ["openai-agents:agents_sdk:build_agent", "pydantic-ai:pydantic_agent:build_agent"],
            4,
        ),
        (DELEGATION, ["pydantic-ai:flight_booking:booking_agent"], 3),
        (TRIAGE, ["openai-agents:triage_agents:build_agent"], 5),
        (ORCHESTRATOR, ["openai-agents:travel_desk:build_agent"], 5),
        (NESTED_RUN, ["openai-agents:bookshop:build_agent"], 4),
        (
            APPROVALS,
            ["openai-agents:sdk_refunds:build_agent", "pydantic-ai:pydantic_refunds:build_agent"],
            3,
        ),
        (AIRLINE_DESK, ["openai-agents:airline_desk:build_agent"], 9),
        (BANK_SUPPORT, ["pydantic-ai:bank_support:support_agent"], 8),
    ],
    ids=[
        "own_loop",
        "support_agent",
        "pydantic_ai_delegation",
        "openai_agents_triage",
        "openai_agents_orchestrator",
        "openai_agents_nested_run",
        "approval_refunds",
        "openai_agents_airline_desk",
        "pydantic_ai_bank_support",
    ],
)
def test_readme_commands_run_green(
    run_cli: Cli, example: Path, agents: list[str], minimum: int
) -> None:
    commands = readme_commands(example)
    assert [c[c.index("--agent") + 1] for c in commands] == agents
    count = len(fixtures_of(example))
    assert count >= minimum
    readme = (example / "README.md").read_text(encoding="utf-8")
    assert f"`{count}/{count} cases passed`" in readme
    for command in commands:
        result = run_cli(*command, cwd=example)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        assert f"{count}/{count} cases passed" in result.stdout
        assert " ✗ " not in result.stdout


def test_no_example_module_shadows_a_framework_package() -> None:
    names = {p.stem for p in EXAMPLES.rglob("*.py")}
    assert names & {"agents", "pydantic_ai", "openai", "harness"} == set()
    assert {
        "loop",
        "agents_sdk",
        "pydantic_agent",
        "triage_agents",
        "travel_desk",
        "bookshop",
        "airline_desk",
        "bank_support",
    } <= names


def test_the_own_loop_uses_no_framework() -> None:
    tree = ast.parse((OWN_LOOP / "loop.py").read_text(encoding="utf-8"))
    imported = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= {"__future__", "harness"}


def test_support_suite_scripts_only_the_users_tools_and_grades_them() -> None:
    scripted: set[str] = set()
    families: set[str] = set()
    for data in fixtures_of(SUPPORT):
        for turn in data["turns"]:
            for step in turn["steps"]:
                for call in step["response"].get("tool_calls", []):
                    scripted.add(call["name"])
        families |= set(data["expects"])
    assert scripted == {"lookup_order", "refund_order"}
    assert {
        "tool_arguments_contain",
        "tool_results_contain",
        "all_tools_succeeded",
        "exact_tool_calls",
    } <= families


@pytest.mark.parametrize(
    "example",
    [
        OWN_LOOP,
        SUPPORT,
        DELEGATION,
        TRIAGE,
        ORCHESTRATOR,
        NESTED_RUN,
        APPROVALS,
        AIRLINE_DESK,
        BANK_SUPPORT,
    ],
    ids=[
        "own_loop",
        "support_agent",
        "pydantic_ai_delegation",
        "openai_agents_triage",
        "openai_agents_orchestrator",
        "openai_agents_nested_run",
        "approval_refunds",
        "openai_agents_airline_desk",
        "pydantic_ai_bank_support",
    ],
)
def test_examples_follow_the_authoring_rules(example: Path) -> None:
    for data in fixtures_of(example):
        description = data["description"]
        assert description.split(".")[0] in ("Positive", "Negative"), data["model_name"]
        for turn in data["turns"]:
            for step in turn["steps"]:
                response = step["response"]
                assert response["input_tokens"] > 0 and response["output_tokens"] > 0
            # A turn an input guardrail stops before the model is asked scripts no step;
            # every other turn ends in the final answer: a text, or a call to pydantic-ai's
            # output tool.
            if turn["steps"]:
                last = turn["steps"][-1]["response"]
                assert last["type"] == "text" or [c["name"] for c in last["tool_calls"]] == [
                    "final_result"
                ], data["model_name"]
            else:
                assert data["expects"].get("guardrails_tripped"), data["model_name"]


def test_examples_use_placeholder_identities_only() -> None:
    for path in sorted(EXAMPLES.rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".json", ".md"):
            continue
        text = path.read_text(encoding="utf-8")
        for address in re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text):
            assert address.endswith("@example.com"), (path, address)
        for host in re.findall(r"https?://([\w.-]+)", text):
            assert host == "example.com" or host.endswith(".example.com"), (path, host)


# --- the judge-graded capability suite ----------------------------------------------------

JUDGE_FOLDER = REPO / "evals" / "judge"


def _judged_copy(tmp_path: Path) -> Path:
    """The capability suite, its calibration set and its judge folder, with the
    repository's judge settings, in a project of their own."""
    import shutil

    root = tmp_path / "project"
    for folder in ("capability", "judge_calibration", "judge"):
        shutil.copytree(REPO / "evals" / folder, root / "evals" / folder)
    judge = [
        line
        for line in (REPO / "pyproject.toml").read_text("utf-8").splitlines()
        if line.startswith("judge_")
    ]
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.zeroclaw.eval]\n' + "\n".join(judge) + "\n", "utf-8"
    )
    return root


def test_the_capability_suite_runs_its_judge_graded_cases_offline(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket.socket, "connect_ex", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    root = _judged_copy(tmp_path)
    result = run_cli(
        "eval", "run", "--suite", "evals/capability", "--json-report", "r.json", cwd=root
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((root / "r.json").read_text("utf-8"))
    judged = [g for c in report["cases"] for g in c["grades"] if g["category"] == "judge"]
    assert len(judged) == 3
    for grade in judged:
        assert grade["passed"] and grade["judge"]["gated"], grade
        assert not grade["judge"]["live"] and grade["judge"]["input_tokens"] == 0
    assert all(c["passed"] for c in report["cases"])


def test_the_committed_calibration_is_what_the_committed_labels_give(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _judged_copy(tmp_path)
    (root / "evals" / "judge" / "calibration.json").unlink()
    result = run_cli("eval", "calibrate", "finalize", "--suite", "evals/capability", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    made = json.loads((root / "evals" / "judge" / "calibration.json").read_text("utf-8"))
    assert made == json.loads((JUDGE_FOLDER / "calibration.json").read_text("utf-8"))
    labels = (JUDGE_FOLDER / "labels.jsonl").read_text("utf-8").splitlines()
    assert len(labels) == sum(made["rubrics"]["states-tool-results"]["confusion"].values())


def test_the_recorded_replies_are_the_stand_in_judge_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES / "stand_in_judge"))
    import stand_in_judge

    replies = [json.loads(p.read_text("utf-8")) for p in (JUDGE_FOLDER / "replies").glob("*.json")]
    # 33 runs' verdicts; the rest are the mutants' answers (`mutate`, case ids with `~`).
    assert len([r for r in replies if "~" not in r["case"]]) == 33
    for recorded in replies:
        answer = stand_in_judge.reply(recorded["request"])
        assert answer["choices"][0]["message"]["content"] == recorded["reply"], recorded["key"]


def test_the_capability_suite_s_rubrics_catch_every_judge_mutant_offline(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = _judged_copy(tmp_path)
    result = run_cli("eval", "mutate", "--suite", "evals/capability", "--json-report", "m.json",
                     cwd=root)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((root / "m.json").read_text("utf-8"))
    assert report["judge"] == {"killed": 9, "generated": 9} and report["not_judged"] == 0
