"""Approvals live and in `zeroclaw eval record`: a live case decides by tool name (the
provider makes the call ids up); the recording keys each decision by the recorded call's
id and replays green; a live run whose request no decision answers is not recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, text_reply, tool_reply
from conftest import LIVE_KEY, REPO, Cli, Runs, live_case, make_project, report_of

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

EXAMPLE = REPO / "examples" / "approval_refunds"
AGENTS = pytest.mark.parametrize(
    "agent",
    ["openai-agents:sdk_refunds:build_agent", "pydantic-ai:pydantic_refunds:build_agent"],
    ids=["openai-agents", "pydantic-ai"],
)
LIVE = Path("evals/live/x.json")
OUT = Path("evals/regression/x.json")


def refund_model(body: Any) -> Action:
    """A provider that asks for a refund (its own call id), then answers from the result."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text_reply(f"Outcome: {last['content']}")
    where = {"order_id": "A-1005", "reason": "changed my mind"}
    return tool_reply([("prov-7f3a", "refund_order", where)])


def refund_case(decisions: dict[str, Any] | None) -> dict[str, Any]:
    data = live_case(
        "refund",
        "Refund order A-1005, please.",
        id="refund",
        expects={"approvals_requested": ["refund_order"], "tools_not_used": ["refund_order"]},
    )
    if decisions is not None:
        data["turns"][0]["approvals"] = decisions
    return data


def desk_project(run_cli: Cli, tmp_path: Path, server: OpenAIServer, case: dict[str, Any]) -> Runs:
    root = make_project(tmp_path / "project", server.base_url, {"x.json": case})
    for name in ("refund_desk.py", "sdk_refunds.py", "pydantic_refunds.py"):
        shutil.copy(EXAMPLE / name, root)
    return Runs(run_cli, root)


REJECTION = {"refund_order": {"approve": False, "reason": "a manager decides over 100 EUR"}}


@AGENTS
def test_a_live_rejection_keyed_by_tool_is_recorded_by_call_id_and_replays_green(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    with OpenAIServer(responder=refund_model, api_key=LIVE_KEY) as server:
        runs = desk_project(run_cli, tmp_path, server, refund_case(REJECTION))
        live = runs.live(agent)
        (case,) = report_of(live)["cases"]
        assert live.returncode == 0, json.dumps(case, indent=2)
        assert case["record"]["approvals"] == [
            {
                "turn": 0,
                "call_id": "prov-7f3a",
                "tool": "refund_order",
                "approved": False,
                "reason": "a manager decides over 100 EUR",
            }
        ]
        # The provider was told the reason, as the tool's result.
        told = [m for m in server.requests[-1].json["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in told] == ["a manager decides over 100 EUR"]
        recorded = runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    written = json.loads((runs.project / OUT).read_text(encoding="utf-8"))
    (turn,) = written["turns"]
    assert turn["steps"][0]["response"]["tool_calls"][0]["id"] == "prov-7f3a"
    assert turn["approvals"] == {
        "prov-7f3a": {"approve": False, "reason": "a manager decides over 100 EUR"}
    }
    replayed = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", agent, "--format", "json",
        key=False,
    )  # fmt: skip
    (case,) = report_of(replayed)["cases"]
    assert replayed.returncode == 0, json.dumps(case, indent=2)
    # The recording's decision is what replays: approved, the refund would run and fail.
    turn["approvals"]["prov-7f3a"] = {"approve": True}
    (runs.project / OUT).write_text(json.dumps(written), encoding="utf-8")
    replayed = runs(
        "eval", "run", "--suite", "evals/regression", "--agent", agent, "--format", "json",
        key=False,
    )  # fmt: skip
    (case,) = report_of(replayed)["cases"]
    assert replayed.returncode == 1
    assert 'tools_not_used("refund_order")' in {
        g["check"] for g in case["grades"] if not g["passed"]
    }


@AGENTS
def test_a_live_request_no_decision_answers_fails_and_record_writes_nothing(
    run_cli: Cli, tmp_path: Path, agent: str
) -> None:
    with OpenAIServer(responder=refund_model, api_key=LIVE_KEY) as server:
        runs = desk_project(run_cli, tmp_path, server, refund_case(None))
        recorded = runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent)
    assert recorded.returncode != 0
    said = recorded.stdout + recorded.stderr
    assert "the live run did not pass its checks" in said
    assert "approval(undecided): turn 0: prov-7f3a (refund_order) asked for approval" in said
    assert '"refund_order": {"approve": true}' in said  # live: the fix keys it by tool
    assert not (runs.project / OUT).exists()
