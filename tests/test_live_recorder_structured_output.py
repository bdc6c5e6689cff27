"""Structured output live and recorded: the provider is asked for the output type (the SDK's
schema as the response format, pydantic-ai's output tool offered beside the function tools),
the live run is graded on the output's JSON, and `zeroclaw eval record` writes the answer as
the model sent it, a fixture that replays green and fails on a wrong field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, text_reply, tool_reply
from conftest import LIVE_KEY, Cli, Runs, live_case, make_project, report_of, write_module
from test_agents_openai_agents_structured_output import SEAT_AGENTS
from test_agents_pydantic_ai_output import BANK_SUPPORT, POLITE

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

LIVE = Path("evals/live/x.json")
OUT = Path("evals/regression/x.json")


def seat_model(body: Any) -> Action:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text_reply(json.dumps({"seat": last["content"], "confirmed": True}))
    return tool_reply([("call_find", "find_seat", {"preference": "window"})])


def support_model(body: Any) -> Action:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return tool_reply([("call_answer", "final_result", POLITE)])
    return tool_reply([("call_balance", "customer_balance", {"include_pending": True})])


SEAT_CASE = live_case(
    "seat",
    "A window seat, please.",
    id="seat",
    expects={"tools_used": ["find_seat"], "response_json": {"/seat": "12A", "/confirmed": True}},
)
SUPPORT_CASE = live_case(
    "support",
    "What is my balance?",
    id="support",
    expects={
        "tools_used": ["customer_balance"],
        "exact_tool_calls": 1,
        "response_json": {"/risk": 1, "/block_card": False},
    },
)


def project(run_cli: Cli, tmp_path: Path, server: OpenAIServer, case: dict[str, Any]) -> Runs:
    return Runs(run_cli, make_project(tmp_path / "project", server.base_url, {"x.json": case}))


def replay(runs: Runs, agent: str) -> tuple[Any, dict[str, Any]]:
    result = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", agent, "--format", "json",
        key=False,
    )  # fmt: skip
    (case,) = report_of(result)["cases"]
    return result, case


def written_steps(runs: Runs) -> list[dict[str, Any]]:
    written = json.loads((runs.project / OUT).read_text(encoding="utf-8"))
    (turn,) = written["turns"]
    return [step["response"] for step in turn["steps"]]


def edit_last_step(runs: Runs, change: Any) -> None:
    path = runs.project / OUT
    written = json.loads(path.read_text(encoding="utf-8"))
    change(written["turns"][0]["steps"][-1]["response"])
    path.write_text(json.dumps(written), encoding="utf-8")


def test_an_sdk_output_type_asks_the_provider_for_its_schema_and_records_the_json(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=seat_model, api_key=LIVE_KEY) as server:
        runs = project(run_cli, tmp_path, server, SEAT_CASE)
        agent = f"openai-agents:{write_module(runs.project, SEAT_AGENTS, 'seats')}:build_agent"
        live = runs.live(agent)
        recorded = runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent)
        bodies = server.bodies
    report = report_of(live)
    assert live.returncode == 0, json.dumps(report, indent=2)
    assert report["cases"][0]["record"]["final_response"] == '{"seat":"12A","confirmed":true}'
    response_format = bodies[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "final_output"
    assert response_format["json_schema"]["schema"]["required"] == ["seat", "confirmed"]
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    # The answer as the model sent it: the JSON text, not the object's Python form.
    assert written_steps(runs)[-1] == {
        "type": "text",
        "content": '{"seat": "12A", "confirmed": true}',
        "input_tokens": 10,
        "output_tokens": 5,
    }
    replayed, case = replay(runs, agent)
    assert replayed.returncode == 0, json.dumps(case, indent=2)

    def wrong_seat(response: dict[str, Any]) -> None:
        response["content"] = '{"seat": "14C", "confirmed": true}'

    edit_last_step(runs, wrong_seat)
    replayed, case = replay(runs, agent)
    assert replayed.returncode == 1
    assert {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]} == {
        'response_json("/seat")': 'got "14C"; expected "12A"'
    }


def test_a_pydantic_ai_output_tool_is_offered_live_and_recorded_as_the_call(
    run_cli: Cli, tmp_path: Path
) -> None:
    with OpenAIServer(responder=support_model, api_key=LIVE_KEY) as server:
        runs = project(run_cli, tmp_path, server, SUPPORT_CASE)
        name = write_module(runs.project, BANK_SUPPORT, "bank")
        agent = f"pydantic-ai:{name}:build_agent"
        live = runs.live(agent)
        recorded = runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent)
        bodies = server.bodies
    report = report_of(live)
    assert live.returncode == 0, json.dumps(report, indent=2)
    record = report["cases"][0]["record"]
    assert json.loads(record["final_response"]) == POLITE
    assert [c["name"] for c in record["calls"]] == ["customer_balance"]
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {
        "customer_balance",
        "final_result",
    }
    assert "response_format" not in bodies[0]
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    (answer,) = written_steps(runs)[-1]["tool_calls"]
    assert (answer["name"], answer["arguments"]) == ("final_result", POLITE)
    replayed, case = replay(runs, agent)
    assert replayed.returncode == 0, json.dumps(case, indent=2)

    def riskier(response: dict[str, Any]) -> None:
        response["tool_calls"][0]["arguments"]["risk"] = 8

    edit_last_step(runs, riskier)
    replayed, case = replay(runs, agent)
    assert replayed.returncode == 1
    assert {g["check"]: g["detail"] for g in case["grades"] if not g["passed"]} == {
        'response_json("/risk")': "got 8; expected 1"
    }
