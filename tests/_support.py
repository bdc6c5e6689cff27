"""Shared helpers for the harness tests: fixture builders, records, user loops, the CLI.

Plain functions only; every fixture a test needs is written into its own `tmp_path`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import msgspec

from harness.agent import AgentContext, AgentSurface
from harness.builtin_tools import BUILTIN_TOOL_NAMES
from harness.expectations.registry import Expects
from harness.fixture import LlmTrace, parse_fixture
from harness.model_boundary import ModelRequest
from harness.run_record import RunRecord
from harness.suite import Case
from harness.tool_registry import RecordedCall

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures" / "zeroclaw"
BUILTIN_SURFACE = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)


# --- fixture dicts ------------------------------------------------------------------------


def call(call_id: str, name: str = "echo", **arguments: Any) -> dict[str, Any]:
    """One scripted tool call."""
    return {"id": call_id, "name": name, "arguments": arguments}


def text_step(content: str, input_tokens: int = 0, output_tokens: int = 0) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "text", "content": content}
    if input_tokens:
        response["input_tokens"] = input_tokens
    if output_tokens:
        response["output_tokens"] = output_tokens
    return {"response": response}


def tool_step(
    *calls: dict[str, Any], input_tokens: int = 0, output_tokens: int = 0
) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "tool_calls", "tool_calls": list(calls)}
    if input_tokens:
        response["input_tokens"] = input_tokens
    if output_tokens:
        response["output_tokens"] = output_tokens
    return {"response": response}


def turn(user_input: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"user_input": user_input, "steps": list(steps)}


def fixture(
    model_name: str, turns: list[dict[str, Any]], expects: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {"model_name": model_name, "turns": turns, "expects": expects, **extra}


def echo_fixture(model_name: str, message: str = "hello") -> dict[str, Any]:
    """A one-turn case: echo `message`, then say what the tool returned."""
    return fixture(
        model_name,
        [
            turn(
                f"Echo {message} for me",
                tool_step(call("call_1", message=message), input_tokens=20, output_tokens=8),
                text_step(f"The echo tool said: {message}", input_tokens=30, output_tokens=6),
            )
        ],
        {
            "response_contains": [message],
            "tools_used": ["echo"],
            "exact_tool_calls": 1,
            "all_tools_succeeded": True,
            "tool_arguments_contain": [{"tool": "echo", "needle": message}],
            "tool_results_contain": [{"tool": "echo", "needle": message}],
        },
    )


def greeting_fixture(model_name: str, reply: str = "Hello there!") -> dict[str, Any]:
    """A one-turn case with no tools."""
    return fixture(
        model_name,
        [turn("Say hello", text_step(reply, input_tokens=5, output_tokens=3))],
        {"response_contains": ["Hello"], "max_tool_calls": 0},
    )


def write_fixture(directory: Path, name: str, data: dict[str, Any] | str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    text = data if isinstance(data, str) else json.dumps(data, indent=2, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path


def write_suite(directory: Path, fixtures: dict[str, dict[str, Any] | str]) -> Path:
    for name, data in fixtures.items():
        write_fixture(directory, name, data)
    return directory


def trace_of(data: dict[str, Any]) -> LlmTrace:
    return parse_fixture(json.dumps(data), "test.json")


def case_of(data: dict[str, Any], path: Path | None = None) -> Case:
    """An admitted-looking `Case` without touching the disk (the runner only reads it)."""
    path = path or Path(f"{data['model_name']}.json")
    return Case(trace_of(data), path, json.dumps(data))


# --- records ------------------------------------------------------------------------------


def expects(**fields: Any) -> Expects:
    return msgspec.convert(fields, Expects)


def recorded(
    name: str = "echo",
    arguments: dict[str, Any] | str | None = None,
    result: str = "",
    success: bool = True,
) -> RecordedCall:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return RecordedCall(name, arguments, result, success, 1.0)


def record(final_response: str = "", calls: list[RecordedCall] | None = None) -> RunRecord:
    return RunRecord(final_response=final_response, calls=list(calls or []))


def echo_call(message: str) -> RecordedCall:
    return recorded("echo", {"message": message}, message)


# --- user loops ---------------------------------------------------------------------------

# A faithful user-written loop over the harness boundaries: it dispatches every tool call and
# feeds the results back.
FAITHFUL_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx
        self.messages = []

    async def run_turn(self, user_input):
        self.messages.append(Message(role="user", content=user_input))
        while True:
            step = await self.ctx.model.respond(ModelRequest(messages=tuple(self.messages)))
            if not step.tool_calls:
                self.messages.append(Message(role="assistant", content=step.text))
                return step.text
            self.messages.append(Message(role="assistant", tool_calls=step.tool_calls))
            for call in step.tool_calls:
                outcome = await self.ctx.tools.dispatch(call.name, call.arguments)
                self.messages.append(
                    Message(role="tool", content=outcome.result, tool_call_id=call.id)
                )


def factory(ctx):
    return Session(ctx)
"""

# A broken loop: asks the model again after a tool-call step but never dispatches the tool.
DROPPING_LOOP = """
from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        messages = [Message(role="user", content=user_input)]
        while True:
            step = await self.ctx.model.respond(ModelRequest(messages=tuple(messages)))
            if not step.tool_calls:
                return step.text
            messages.append(Message(role="assistant", tool_calls=step.tool_calls))


def factory(ctx):
    return Session(ctx)
"""


def write_module(directory: Path, source: str, prefix: str = "user_loop") -> str:
    """Write `source` as a uniquely named module in `directory`; returns the module name.

    Unique names keep modules of different tests apart in `sys.modules`.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


# --- the command line ---------------------------------------------------------------------


def run_cli(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`python -m harness <args>` in a subprocess, as CI runs it."""
    environment = {
        k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")
    }
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), environment.get("PYTHONPATH", "")) if p
    )
    environment["PYTHONIOENCODING"] = "utf-8"
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class Recording:
    """Wraps an adapter; keeps every model request its cases make, in order."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    def tools(self) -> Any:
        return self.inner.tools()

    def tool_names(self) -> frozenset[str]:
        return frozenset(self.inner.tool_names())

    def start(self, context: AgentContext) -> Any:
        respond = context.model.respond

        async def recording(request: ModelRequest) -> Any:
            self.requests.append(request)
            return await respond(request)

        context.model.respond = recording  # type: ignore[method-assign]
        return self.inner.start(context)
