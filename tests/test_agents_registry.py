"""`harness.agents.registry`: resolving the `agent` setting: a built-in name, or
`module:attribute` of the user's code."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import refusal, replay_trace, write_fixture, write_module

from harness.agents.protocol import AgentAdapter, AgentSurface, LoopAdapter
from harness.agents.registry import (
    AgentError,
    agent_surface,
    resolve_agent,
    resolve_within,
    surface_of,
)
from harness.builtin_toolset import BUILTIN_TOOL_NAMES

USER_MODULE = """\
from harness import Tool


class Session:
    def __init__(self, context):
        self.context = context

    def run_turn(self, user_input):
        return "said: " + user_input


def build(context):
    return Session(context)


def not_a_session(context):
    return 42


def _lookup(arguments):
    return "found"


LOOKUP = Tool("lookup", "Look something up.", {"type": "object", "properties": {}}, _lookup)


class MyAdapter:
    name = "my-adapter"

    def tools(self):
        return [LOOKUP]

    def start(self, context):
        return Session(context)


ADAPTER = MyAdapter()


class NotAnAdapter:
    pass


NUMBER = 3
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of the user's own agent code, importable for this test only."""
    name = write_module(tmp_path, USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


# --- built-in names ----------------------------------------------------------------------------


def test_builtin_name_resolves_to_its_adapter() -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    adapter = resolve_agent("openai-agents")
    assert isinstance(adapter, AgentAdapter)
    assert type(adapter).__name__ == "OpenAIAgentsAdapter"
    assert adapter.name == "openai-agents"
    assert agent_surface(adapter) == AgentSurface(
        "openai-agents",
        frozenset({"echo", "fail", "read_file", "write_file", "list_files"}),
        guardrails=frozenset(),  # the built-in agent has none: a name is refused
    )


def test_builtin_name_is_trimmed() -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    assert resolve_agent("  openai-agents\n").name == "openai-agents"


def test_surface_of_builtin_does_not_need_the_framework() -> None:
    assert surface_of("openai-agents") == AgentSurface(
        "openai-agents", BUILTIN_TOOL_NAMES, guardrails=frozenset()
    )
    assert sorted(BUILTIN_TOOL_NAMES) == ["echo", "fail", "list_files", "read_file", "write_file"]


@pytest.mark.parametrize("spec", ["langchain", "openai_agents", "OpenAI-Agents", ""])
def test_unknown_name_is_an_error(spec: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent(spec)
    assert str(caught.value) == (
        f"unknown agent {spec!r}: use a built-in agent (openai-agents, pydantic-ai) "
        "or 'module:factory'"
    )


def test_unknown_name_error_from_surface_of() -> None:
    with pytest.raises(AgentError) as caught:
        surface_of("nope")
    assert str(caught.value).startswith("unknown agent 'nope': use a built-in agent")


# --- module:factory ------------------------------------------------------------------------------


def test_module_factory_becomes_a_loop_adapter(user_module: str) -> None:
    spec = f"{user_module}:build"
    adapter = resolve_agent(spec)
    assert isinstance(adapter, LoopAdapter)
    assert isinstance(adapter, AgentAdapter)
    assert adapter.name == spec
    assert {t.name for t in adapter.tools()} == set(
        frozenset({"echo", "fail", "read_file", "write_file", "list_files"})
    )
    context = SimpleNamespace(case_id="case-1")
    session = adapter.start(context)  # type: ignore[arg-type]
    assert session.context is context  # type: ignore[attr-defined]
    assert session.run_turn("hi") == "said: hi"


def test_surface_of_module_factory_has_the_builtin_tools(user_module: str) -> None:
    spec = f"{user_module}:build"
    assert surface_of(spec) == AgentSurface(
        spec, frozenset({"echo", "fail", "read_file", "write_file", "list_files"})
    )


def test_factory_returning_a_non_session_fails_at_start(user_module: str) -> None:
    spec = f"{user_module}:not_a_session"
    adapter = resolve_agent(spec)
    with pytest.raises(TypeError) as caught:
        adapter.start(SimpleNamespace(case_id="c"))  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"agent factory {spec!r} returned int, which has no run_turn(user_input) method"
    )


def test_module_in_the_working_directory_is_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Console scripts do not put the working directory on sys.path; resolution does.
    name = write_module(tmp_path, USER_MODULE)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.chdir(tmp_path)
    try:
        adapter = resolve_agent(f"{name}:build")
    finally:
        sys.modules.pop(name, None)
    assert adapter.name == f"{name}:build"


def test_missing_attribute(user_module: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent(f"{user_module}:make_agent")
    assert str(caught.value) == (
        f"agent '{user_module}:make_agent': module {user_module} has no 'make_agent'"
    )


def test_missing_module() -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent("zc_no_such_module_4711:build")
    assert str(caught.value) == (
        "agent 'zc_no_such_module_4711:build': cannot import zc_no_such_module_4711: "
        "No module named 'zc_no_such_module_4711'"
    )


def test_module_whose_own_import_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = write_module(tmp_path, "import zc_missing_dependency_4711\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AgentError) as caught:
        resolve_agent(f"{name}:build")
    assert str(caught.value) == (
        f"agent '{name}:build': cannot import {name}: No module named 'zc_missing_dependency_4711'"
    )


@pytest.mark.parametrize("spec", ["my_agent:", ":build"])
def test_malformed_module_attribute(spec: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent(spec)
    assert str(caught.value) == f"agent {spec!r}: expected 'module:attribute'"


# --- adapters of the user's own --------------------------------------------------------------


def test_class_that_is_an_adapter_is_instantiated(user_module: str) -> None:
    adapter = resolve_agent(f"{user_module}:MyAdapter")
    assert type(adapter).__name__ == "MyAdapter"
    assert type(adapter).__module__ == user_module
    assert adapter.name == "my-adapter"
    assert agent_surface(adapter) == AgentSurface("my-adapter", frozenset({"lookup"}))
    assert surface_of(f"{user_module}:MyAdapter") == AgentSurface(
        "my-adapter", frozenset({"lookup"})
    )


def test_adapter_instance_is_used_as_is(user_module: str) -> None:
    adapter = resolve_agent(f"{user_module}:ADAPTER")
    assert adapter is sys.modules[user_module].ADAPTER


def test_class_that_is_not_an_adapter(user_module: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent(f"{user_module}:NotAnAdapter")
    assert str(caught.value) == (
        f"agent '{user_module}:NotAnAdapter': class NotAnAdapter is not an AgentAdapter"
    )


def test_attribute_neither_adapter_nor_callable(user_module: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve_agent(f"{user_module}:NUMBER")
    assert str(caught.value) == (
        f"agent '{user_module}:NUMBER': int is neither an adapter nor callable"
    )


def test_admission_checks_scripted_tools_against_the_resolved_agent(
    tmp_path: Path, user_module: str
) -> None:
    agent = surface_of(f"{user_module}:MyAdapter")
    path = write_fixture(tmp_path, "case.json", replay_trace())
    [problem] = refusal(path, agent=agent)
    assert str(problem) == (
        f"{path}: $.turns[0].steps[0].response.tool_calls[0].name: tool 'echo' is not "
        "registered by agent 'my-adapter' (its tools: lookup)"
    )


# --- the collector while an agent is resolved ---------------------------------------------------

COLLECTOR_SEEN = """\
import gc
import time

SEEN = gc.isenabled()


def build(context):
    return None


def blocks(context):
    time.sleep(5)
"""


def test_an_agent_is_resolved_with_the_collector_paused_and_it_runs_again_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = write_module(tmp_path, COLLECTOR_SEEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert gc.isenabled()
        resolve_within(f"{name}:build", 10.0)
        assert sys.modules[name].SEEN is False  # its import ran with the collector paused
        assert gc.isenabled()
    finally:
        sys.modules.pop(name, None)
        gc.enable()


def test_a_collector_the_caller_paused_stays_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = write_module(tmp_path, COLLECTOR_SEEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    gc.disable()
    try:
        resolve_within(f"{name}:build", 10.0)
        assert not gc.isenabled()
    finally:
        sys.modules.pop(name, None)
        gc.enable()


def test_the_collector_runs_again_when_an_agent_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build thread is abandoned still blocked: the collector is not left to it.
    name = write_module(tmp_path, COLLECTOR_SEEN + "\nblocks(None)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(AgentError, match="still not built"):
            resolve_within(f"{name}:build", 0.3)
        assert gc.isenabled()
    finally:
        sys.modules.pop(name, None)
        gc.enable()
