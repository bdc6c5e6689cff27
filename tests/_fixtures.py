"""Fixture-writing helpers for the admission, suite, config and agent-resolution tests.

Plain functions only (no pytest fixtures): every test writes what it needs into its own
`tmp_path`.
"""

from __future__ import annotations

import copy
import importlib
import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.agent import AgentSurface
from harness.builtin_tools import BUILTIN_TOOL_NAMES
from harness.modes import Mode
from harness.problems import AdmissionError, Problem
from harness.suite import Case, load_case

# The original harness's fixtures live beside the repository; they are read in place, never
# copied into it.
SHARED_FIXTURE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "zeroclaw"

_REPLAY_TRACE: dict[str, Any] = {
    "model_name": "echo-hello",
    "turns": [
        {
            "user_input": "Echo hello for me",
            "steps": [
                {
                    "response": {
                        "type": "tool_calls",
                        "tool_calls": [
                            {"id": "call_1", "name": "echo", "arguments": {"message": "hello"}}
                        ],
                    }
                },
                {"response": {"type": "text", "content": "The echo tool said: hello"}},
            ],
        }
    ],
    "expects": {"response_contains": ["hello"], "tools_used": ["echo"]},
}


def builtin_surface() -> AgentSurface:
    """What admission knows of the default agent: the built-in `echo` and `fail` tools."""
    return AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)


def replay_trace(**top_level: Any) -> dict[str, Any]:
    """A fresh, admissible replay fixture (one turn: an `echo` call, then text);
    `top_level` keys replace or add top-level keys."""
    data = copy.deepcopy(_REPLAY_TRACE)
    data.update(copy.deepcopy(top_level))
    return data


def live_trace(**top_level: Any) -> dict[str, Any]:
    """A fresh, admissible live fixture: one turn, no scripted steps."""
    data: dict[str, Any] = {
        "model_name": "live-echo",
        "turns": [{"user_input": "Echo hello for me"}],
        "expects": {"response_contains": ["hello"], "tools_used": ["echo"]},
    }
    data.update(copy.deepcopy(top_level))
    return data


def write_fixture(directory: Path, name: str, content: dict[str, Any] | str | bytes) -> Path:
    """Write one fixture file: a dict as JSON, a str as UTF-8 text, bytes as they are."""
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(json.dumps(content, indent=2, ensure_ascii=False).encode("utf-8"))
    return path


def admit(path: Path, mode: Mode = "replay", agent: AgentSurface | None = None) -> Case:
    """Load one fixture that must be admitted."""
    return load_case(path, mode, agent or builtin_surface())


def refusal(path: Path, mode: Mode = "replay", agent: AgentSurface | None = None) -> list[Problem]:
    """Load one fixture that must be refused; return every problem reported."""
    with pytest.raises(AdmissionError) as caught:
        load_case(path, mode, agent or builtin_surface())
    problems = caught.value.problems
    assert problems, "an AdmissionError must carry at least one problem"
    # The rendered error is what a user sees: one `file: field: message` line per problem.
    assert str(caught.value) == "\n".join(str(p) for p in problems)
    return problems


def lines(problems: list[Problem]) -> list[str]:
    """Problems as the user reads them: `file: $.json.path: message`."""
    return [str(p) for p in problems]


def write_module(directory: Path, source: str, prefix: str = "zc_test_agent") -> str:
    """Write a uniquely named Python module into `directory`; return its module name.

    The caller puts `directory` on sys.path (via monkeypatch) so the module is importable.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    importlib.invalidate_caches()
    return name
