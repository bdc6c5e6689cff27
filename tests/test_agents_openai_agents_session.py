"""The `session` setting: an OpenAI Agents SDK agent whose conversation a `Session` keeps
(`Runner.run(..., session=...)`), one fresh session per case, replayed faithfully over
several turns; refused for any other agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, call, fixture, text_step, tool_step, turn, write_module, write_suite

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

AGENT = """\
from __future__ import annotations

import json

from agents import Agent, SQLiteSession, function_tool
from agents.memory import SessionSettings
from pydantic_ai import Agent as PaiAgent

# What the SDK stored in each case's session, by case id: the session is its memory.
STORED: dict[str, list[dict]] = {}
CLOSED: list[str] = []


@function_tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look up an order's status.\"\"\"
    return {"A-1": "shipped", "A-2": "pending"}.get(order_id, "not found")


def build_agent() -> Agent:
    return Agent(name="support", instructions="Answer order questions.", tools=[lookup_order])


def build_pai():
    return PaiAgent(instructions="Answer order questions.", name="support")


class WatchedSession(SQLiteSession):
    async def add_items(self, items):
        STORED.setdefault(self.session_id, []).extend(items)
        await super().add_items(items)

    def close(self):
        # Said in a file: the test reads what the harness's run did to the session.
        CLOSED.append(self.session_id)
        with open("sessions.json", "w", encoding="utf-8") as out:
            json.dump({"stored": STORED, "closed": CLOSED}, out)
        super().close()


def make_session(case_id: str) -> WatchedSession:
    return WatchedSession(case_id)


def short_memory(case_id: str) -> WatchedSession:
    # Only the last two items of the conversation reach the model: a production setting.
    return WatchedSession(case_id, session_settings=SessionSettings(limit=2))


def broken_session(case_id: str):
    raise ConnectionError("the session store is down")
"""

SPEC = "openai-agents:{module}:build_agent"


def two_turns(**expects: Any) -> dict[str, Any]:
    return fixture(
        "two-orders",
        [
            turn(
                "Where is order A-1?",
                tool_step(call("c1", "lookup_order", order_id="A-1")),
                text_step("A-1 has shipped."),
            ),
            turn(
                "And A-2?",
                tool_step(call("c2", "lookup_order", order_id="A-2")),
                text_step("A-2 is pending."),
            ),
        ],
        {
            "tools_used": ["lookup_order"],
            "exact_tool_calls": 2,
            "response_contains": ["pending"],
            **expects,
        },
    )


def run(run_cli: Cli, root: Path, module: str, *flags: str, agent: str = SPEC) -> Any:
    return run_cli(
        "eval", "run", "--suite", "evals", "--agent", agent.format(module=module),
        "--json-report", "r.json", *flags, cwd=root,
    )  # fmt: skip


def only_case(root: Path) -> dict[str, Any]:
    (case,) = json.loads((root / "r.json").read_text(encoding="utf-8"))["cases"]
    return dict(case)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = write_module(tmp_path, AGENT, prefix="session_agent")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_an_sdk_session_keeps_the_conversation_across_turns(
    run_cli: Cli, tmp_path: Path, module: str
) -> None:
    # The second turn's request holds the first turn's question: the session gave it back.
    data = two_turns(
        request_contains=[{"turn": 1, "step": 0, "role": "user", "needle": "Where is order A-1?"}]
    )
    write_suite(tmp_path / "evals", {"orders.json": data})
    result = run(run_cli, tmp_path, module, "--session", f"{module}:make_session")
    assert result.returncode == 0, json.dumps(only_case(tmp_path), indent=2)
    seen = json.loads((tmp_path / "sessions.json").read_text(encoding="utf-8"))
    stored = seen["stored"]["two-orders"]
    assert [i.get("content") for i in stored if i.get("role") == "user"] == [
        "Where is order A-1?",
        "And A-2?",
    ]
    assert [i["call_id"] for i in stored if i.get("type") == "function_call_output"] == [
        "c1",
        "c2",
    ]
    assert seen["closed"] == ["two-orders"]


def test_the_built_in_sqlite_session_replays_a_multi_turn_case_green(
    run_cli: Cli, tmp_path: Path, module: str
) -> None:
    write_suite(tmp_path / "evals", {"orders.json": two_turns()})
    result = run(run_cli, tmp_path, module, "--session", "sqlite")
    assert result.returncode == 0, json.dumps(only_case(tmp_path), indent=2)


def test_the_sessions_own_settings_decide_what_the_model_is_sent(
    run_cli: Cli, tmp_path: Path, module: str
) -> None:
    # A session limited to two items drops the first question from the second turn's
    # request: the replay runs what the session does, and replay conformance says so.
    data = two_turns(
        request_not_contains=[
            {"turn": 1, "step": 0, "role": "user", "needle": "Where is order A-1?"}
        ]
    )
    write_suite(tmp_path / "evals", {"orders.json": data})
    result = run(run_cli, tmp_path, module, "--session", f"{module}:short_memory")
    case = only_case(tmp_path)
    checks = {g["check"]: g["passed"] for g in case["grades"]}
    assert checks['request_not_contains(turn 1, step 0, "user", "Where is order A-1?")'] is True
    assert checks["loop(history)"] is False
    assert result.returncode == 1


def test_a_session_factory_that_raises_is_the_cases_run_error(
    run_cli: Cli, tmp_path: Path, module: str
) -> None:
    write_suite(tmp_path / "evals", {"orders.json": two_turns()})
    result = run(run_cli, tmp_path, module, "--session", f"{module}:broken_session")
    assert result.returncode == 1
    assert only_case(tmp_path)["error"] == (
        f"the session factory '{module}:broken_session' failed: ConnectionError: the "
        "session store is down"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "agent", ["pydantic-ai:{module}:build_pai", "pydantic-ai", "{module}:no_loop_needed"]
)
def test_a_session_for_an_agent_of_another_kind_is_refused(
    run_cli: Cli, tmp_path: Path, module: str, agent: str
) -> None:
    write_suite(tmp_path / "evals", {"orders.json": two_turns()})
    if agent.endswith("no_loop_needed"):
        (tmp_path / f"{module}.py").write_text(
            (tmp_path / f"{module}.py").read_text(encoding="utf-8")
            + "\n\ndef no_loop_needed(context):\n    return None\n",
            encoding="utf-8",
        )
    result = run(run_cli, tmp_path, module, "--session", "sqlite", agent=agent)
    assert result.returncode == 1
    name = agent.format(module=module)
    assert result.stderr == (
        f"zeroclaw eval: session 'sqlite': a Session keeps an OpenAI Agents SDK agent's "
        f"conversation, and agent {name!r} is none (pydantic-ai carries its conversation as "
        "message_history, and an own loop keeps its own)\n"
    )
