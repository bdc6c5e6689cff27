"""`harness.agents.registry`: a framework agent's factory named without its framework's
prefix, or under the other framework's, is refused with the spec that runs it, naming the
framework of what it returned; an own loop's factory is never called to find out."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Cli, replay_trace, write_module, write_suite

from harness.agents.protocol import LoopAdapter
from harness.agents.registry import AgentError, resolve_agent

pytest.importorskip("agents", reason="the openai-agents extra is not installed")
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

AGENTS = """\
from __future__ import annotations

from agents import Agent, function_tool
from pydantic_ai import Agent as PaiAgent

CALLED = []


@function_tool
def faq_lookup_tool(question: str) -> str:
    \"\"\"Look up a frequently asked question.\"\"\"
    return "answer"


def build_agent() -> Agent:
    return Agent(name="airline", instructions="Help travellers.", tools=[faq_lookup_tool])


def build_unannotated():
    return Agent(name="airline", instructions="Help travellers.", tools=[faq_lookup_tool])


def build_with_model(model: str = "gpt-4o") -> Agent:
    return Agent(name="airline", instructions="Help travellers.", model=model)


def build_pai():
    return PaiAgent(instructions="Help travellers.", name="airline")


AIRLINE = build_agent()
PAI_AGENT = build_pai()


def loop_factory(context):
    CALLED.append(context)
    raise AssertionError("an own loop's factory is only called by the runner")


def loop_factory_with_default(context=None):
    CALLED.append(context)
    raise AssertionError("an own loop's factory is only called by the runner")


def returns_a_string():
    return "not an agent"


def cannot_build():
    raise RuntimeError("no settings")


def loop_returning_an_agent(context):
    return build_agent()
"""


@pytest.fixture
def airline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = write_module(tmp_path, AGENTS, prefix="airline_agent")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def refused(spec: str) -> str:
    with pytest.raises(AgentError) as caught:
        resolve_agent(spec)
    return str(caught.value)


@pytest.mark.parametrize("factory", ["build_agent", "build_unannotated", "build_with_model"])
def test_an_sdk_factory_without_its_prefix_names_the_spec_to_use(
    airline: str, factory: str
) -> None:
    spec = f"{airline}:{factory}"
    assert refused(spec) == (
        f"agent {spec!r}: {factory} returned an OpenAI Agents SDK agent (agents.Agent): "
        f"use 'openai-agents:{spec}'"
    )


def test_a_pydantic_ai_factory_without_its_prefix_names_the_spec_to_use(airline: str) -> None:
    spec = f"{airline}:build_pai"
    assert refused(spec) == (
        f"agent {spec!r}: build_pai returned a pydantic-ai agent (pydantic_ai.Agent): "
        f"use 'pydantic-ai:{spec}'"
    )


@pytest.mark.parametrize(
    ("attribute", "framework", "label"),
    [
        ("AIRLINE", "openai-agents", "an OpenAI Agents SDK agent (agents.Agent)"),
        ("PAI_AGENT", "pydantic-ai", "a pydantic-ai agent (pydantic_ai.Agent)"),
    ],
)
def test_an_agent_instance_without_its_prefix_names_the_spec_to_use(
    airline: str, attribute: str, framework: str, label: str
) -> None:
    spec = f"{airline}:{attribute}"
    assert refused(spec) == f"agent {spec!r}: {attribute} is {label}: use '{framework}:{spec}'"


@pytest.mark.parametrize(
    ("prefix", "factory", "right", "label"),
    [
        (
            "pydantic-ai",
            "build_agent",
            "openai-agents",
            "an OpenAI Agents SDK agent (agents.Agent)",
        ),
        ("openai-agents", "build_pai", "pydantic-ai", "a pydantic-ai agent (pydantic_ai.Agent)"),
        ("pydantic-ai", "AIRLINE", "openai-agents", "an OpenAI Agents SDK agent (agents.Agent)"),
    ],
)
def test_the_wrong_prefix_names_the_right_one(
    airline: str, prefix: str, factory: str, right: str, label: str
) -> None:
    spec = f"{prefix}:{airline}:{factory}"
    wanted = "a pydantic_ai.Agent" if prefix == "pydantic-ai" else "an agents.Agent"
    assert refused(spec).endswith(
        f"the factory returned Agent, not {wanted} but {label}: use {right}:{airline}:{factory}"
    )


def test_an_own_loops_factory_under_a_prefix_is_refused_uncalled(airline: str) -> None:
    spec = f"openai-agents:{airline}:loop_factory"
    assert refused(spec) == (
        f"agent {spec!r}: loop_factory takes arguments, so it is no openai-agents agent's "
        f"factory (that takes none); an own loop's factory(context) is named without the "
        f"prefix: '{airline}:loop_factory'"
    )
    assert sys.modules[airline].CALLED == []


@pytest.mark.parametrize("factory", ["loop_factory", "loop_factory_with_default"])
def test_an_own_loops_factory_is_not_called_at_resolution(airline: str, factory: str) -> None:
    adapter = resolve_agent(f"{airline}:{factory}")
    assert isinstance(adapter, LoopAdapter)
    assert sys.modules[airline].CALLED == []


def test_a_factory_taking_nothing_and_returning_no_agent_is_refused(airline: str) -> None:
    spec = f"{airline}:returns_a_string"
    assert refused(spec) == (
        f"agent {spec!r}: returns_a_string takes no arguments and returned str: an own "
        "loop's factory(context) takes the case's AgentContext and returns a session; a "
        "framework agent's factory returns an agent, named with its framework "
        f"(openai-agents, pydantic-ai:{spec})"
    )


def test_a_factory_taking_nothing_that_raises_is_refused_with_its_error(airline: str) -> None:
    spec = f"{airline}:cannot_build"
    assert refused(spec) == (
        f"agent {spec!r}: cannot_build takes no arguments, so it is no own loop's "
        "factory(context), and calling it failed: RuntimeError: no settings"
    )


def test_an_own_loop_returning_an_sdk_agent_says_how_to_run_one(airline: str) -> None:
    adapter = resolve_agent(f"{airline}:loop_returning_an_agent")
    with pytest.raises(TypeError) as caught:
        adapter.start(object())  # type: ignore[arg-type]
    assert str(caught.value).endswith(
        "which has no run_turn(user_input) method: it is an OpenAI Agents SDK agent "
        f"(agents.Agent), whose factory takes no arguments: "
        f"openai-agents:{airline}:loop_returning_an_agent names one"
    )


def test_the_cli_refuses_the_unprefixed_factory_before_admission(
    run_cli: Cli, tmp_path: Path
) -> None:
    # The report: a misleading "tool 'faq_lookup_tool' is not registered" refusal.
    name = write_module(tmp_path, AGENTS, prefix="airline_agent")
    trace = replay_trace()
    trace["turns"][0]["steps"][0]["response"]["tool_calls"][0]["name"] = "faq_lookup_tool"
    write_suite(tmp_path / "evals", {"faq.json": trace})
    try:
        for command in ("run", "check"):
            result = run_cli(
                "eval", command, "--suite", "evals", "--agent", f"{name}:build_agent", cwd=tmp_path
            )
            assert result.returncode == 1, result.stderr
            assert result.stderr == (
                f"zeroclaw eval: agent '{name}:build_agent': build_agent returned an OpenAI "
                f"Agents SDK agent (agents.Agent): use 'openai-agents:{name}:build_agent'\n"
            )
    finally:
        sys.modules.pop(name, None)
