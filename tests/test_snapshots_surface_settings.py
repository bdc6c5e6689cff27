"""The model settings in a request snapshot: what the framework sends with each request
(the SDK's `ModelSettings`, pydantic-ai's `model_settings`) reaches `ModelRequest.settings`,
the snapshot shows it when the agent sets any, and a changed temperature fails the
regression suite with a diff naming it until `--update-snapshots` takes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    Recording,
    call,
    case_of,
    fixture,
    text_step,
    tool_step,
    turn,
    write_module,
    write_suite,
)

from harness.agents.registry import resolve_agent
from harness.pipeline import run_cases

# As the SDK's docs set an agent's model settings; the header is a provider extra, which
# may hold a key, and is never shown.
SDK_AGENT = """
from agents import Agent, ModelSettings, function_tool


@function_tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up by its id.\"\"\"
    return f"Order {order_id} has shipped."


def build_agent() -> Agent:
    return Agent(
        name="support",
        instructions="Look orders up before answering.",
        tools=[lookup_order],
        model_settings=ModelSettings(
            temperature=0.2,
            max_tokens=300,
            top_p=0.9,
            extra_headers={"X-Api-Key": "sk-not-a-real-key"},
        ),
    )
"""

# As pydantic-ai's docs set them: a dict on the agent.
PAI_AGENT = """
from pydantic_ai import Agent

support_agent = Agent(
    instructions="Look orders up before answering.",
    model_settings={
        "temperature": 0.1,
        "max_tokens": 200,
        "extra_headers": {"X-Api-Key": "sk-not-a-real-key"},
    },
)


@support_agent.tool_plain
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up by its id.\"\"\"
    return f"Order {order_id} has shipped."
"""

LOOKUP = fixture(
    "lookup",
    [
        turn(
            "Where is order 7?",
            tool_step(call("c1", "lookup_order", order_id="7")),
            text_step("Order 7 has shipped."),
        )
    ],
    {"tools_used": ["lookup_order"], "response_contains": ["shipped"]},
)


@pytest.mark.parametrize(
    ("source", "spec", "settings"),
    [
        (
            SDK_AGENT,
            "openai-agents:{}:build_agent",
            {"temperature": 0.2, "top_p": 0.9, "max_tokens": 300},
        ),
        (PAI_AGENT, "pydantic-ai:{}:support_agent", {"temperature": 0.1, "max_tokens": 200}),
    ],
    ids=["openai-agents", "pydantic-ai"],
)
def test_the_settings_the_framework_sends_reach_every_request_without_extras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, spec: str, settings: Any
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    adapter = Recording(resolve_agent(spec.format(write_module(tmp_path, source, "tuned"))))
    (case,) = run_cases([case_of(LOOKUP)], adapter, suite="s").cases
    assert case.passed, case.error
    assert [r.settings for r in adapter.requests] == [settings, settings]


def test_an_agent_on_its_providers_defaults_sends_no_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    source = SDK_AGENT.split("        model_settings=")[0] + "    )\n"
    adapter = Recording(
        resolve_agent(f"openai-agents:{write_module(tmp_path, source)}:build_agent")
    )
    (case,) = run_cases([case_of(LOOKUP)], adapter, suite="s").cases
    assert case.passed, case.error
    # The SDK's defaults for its own default model are not the harness model's: nothing.
    assert [r.settings for r in adapter.requests] == [{}, {}]


def test_a_changed_temperature_fails_the_regression_suite_with_its_diff_until_updated(
    run_cli: Cli, tmp_path: Path
) -> None:
    module = write_module(tmp_path, SDK_AGENT, "tuned")
    write_suite(tmp_path / "evals", {"lookup.json": LOOKUP})
    spec = f"openai-agents:{module}:build_agent"
    run_args = ("eval", "run", "--suite", "evals", "--agent", spec, "--jobs", "1")
    assert run_cli(*run_args, "--update-snapshots", cwd=tmp_path).returncode == 0
    (snapshot,) = (tmp_path / "evals" / "__snapshots__").rglob("*.snap")
    taken = snapshot.read_text("utf-8")
    assert '--- model settings\n{\n  "max_tokens": 300,\n  "temperature": 0.2,' in taken
    assert "sk-not-a-real-key" not in taken and "X-Api-Key" not in taken

    source = tmp_path / f"{module}.py"
    source.write_text(source.read_text("utf-8").replace("0.2", "0.7"), "utf-8")
    failed = run_cli(*run_args, cwd=tmp_path)
    assert failed.returncode == 1
    assert "request_snapshot: what the agent shows the model changed" in failed.stdout
    # The hunk is headed by the part it changed, and says the old and the new value.
    heading = r"@@ -\d+,\d+ \+\d+,\d+ @@ === agent: \(the agent under test\) / --- model settings"
    assert re.search(heading, failed.stdout), failed.stdout
    lines = [line.strip() for line in failed.stdout.splitlines()]
    assert '-  "temperature": 0.2,' in lines and '+  "temperature": 0.7,' in lines
    assert snapshot.read_text("utf-8") == taken  # a run never writes one of its own accord

    assert run_cli(*run_args, "--update-snapshots", cwd=tmp_path).returncode == 0
    assert '"temperature": 0.7' in snapshot.read_text("utf-8")
    assert run_cli(*run_args, cwd=tmp_path).returncode == 0


def test_the_snapshot_kills_changed_model_settings(run_cli: Cli, tmp_path: Path) -> None:
    module = write_module(tmp_path, SDK_AGENT, "tuned")
    write_suite(tmp_path / "evals", {"lookup.json": LOOKUP})
    spec = f"openai-agents:{module}:build_agent"
    args = ("--suite", "evals", "--agent", spec)
    assert run_cli("eval", "run", *args, "--update-snapshots", cwd=tmp_path).returncode == 0
    result = run_cli("eval", "mutate", *args, "--json-report", "m.json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (case,) = json.loads((tmp_path / "m.json").read_text("utf-8"))["cases"]
    (changed,) = [m for m in case["mutants"] if m["name"] == "change_model_settings"]
    assert changed["killed"] and changed["by"].startswith("request_snapshot"), changed
