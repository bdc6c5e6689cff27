"""`harness.live.recorder`: `zeroclaw eval record`: one live run against the loopback server
becomes a replay fixture that passes `check` and replays green through both frameworks,
holding every model step the run used and nothing secret or machine-specific; or nothing is
written at all."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from _openai_server import Action, OpenAIServer, RecordedRequest, hang, text_reply
from conftest import (
    AGENTS,
    BUILTIN_SURFACE,
    LIVE_KEY,
    LIVE_KEY_CORE,
    LIVE_KEY_ENV,
    Cli,
    CliResult,
    Runs,
    assert_key_kept_out,
    live_case,
    make_project,
    report_of,
    say,
    tiny_model,
    write_fixture,
    write_module,
)

from harness.agents.registry import resolve_agent
from harness.fixtures.suite import load_case
from harness.live.recorder import RecordError, write_recording
from harness.model_boundary import ModelRequest, ModelStep
from harness.pipeline import run_cases
from harness.verdict.reports import CaseReport

LIVE = Path("evals/live/x.json")
OUT = Path("evals/regression/x.json")

# Three turns over the workspace and echo: a setup file read back, a file written, an echo.
RECORDED_CASE = live_case(
    "record-me",
    "read: data/input.txt",
    "write: out/result.txt = recorded-77",
    "echo: zeroclaw-probe-7",
    id="record-me",
    description="Recorded from a live run against the loopback server.",
    tools=["echo", "read_file", "write_file"],
    setup={"workspace_files": {"data/input.txt": "setup-payload-31"}},
    expects={
        "tool_results_contain": [{"tool": "read_file", "needle": "setup-payload-31"}],
        "tools_used": ["read_file", "write_file", "echo"],
        "exact_tool_calls": 3,
        "all_tools_succeeded": True,
        "response_contains": ["zeroclaw-probe-7"],
        "workspace": {"file_contains": {"out/result.txt": ["recorded-77"]}},
        "budget": {"max_llm_calls": 6},
    },
)


def project_with(run_cli: Cli, tmp_path: Path, server: OpenAIServer, case: dict[str, Any]) -> Runs:
    return Runs(run_cli, make_project(tmp_path / "project", server.base_url, {LIVE.name: case}))


def record(runs: Runs, agent: str = "openai-agents", *extra: str, key: bool = True) -> CliResult:
    return runs("eval", "record", "--case", LIVE, "--out", OUT, "--agent", agent, *extra, key=key)


def answered_steps(requests: list[RecordedRequest]) -> list[dict[str, Any]]:
    """What the loopback model answered to each request, as fixture responses (the tiny
    model is deterministic, so asking it again gives the same answers)."""
    steps = []
    for request in requests:
        reply = tiny_model(request.json)
        document = json.loads(reply.body)  # type: ignore[union-attr]
        message = document["choices"][0]["message"]
        usage = document["usage"]
        tokens = {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        }
        if message.get("tool_calls"):
            calls = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
                for c in message["tool_calls"]
            ]
            steps.append({"response": {"type": "tool_calls", "tool_calls": calls, **tokens}})
        else:
            steps.append({"response": {"type": "text", "content": message["content"], **tokens}})
    return steps


def assert_nothing_machine_specific(text: str, server: OpenAIServer, tmp_path: Path) -> None:
    assert LIVE_KEY_CORE not in text
    for needle in (
        server.base_url,
        "127.0.0.1",
        f":{server.port}",
        str(tmp_path),
        os.path.realpath(tmp_path),
        str(Path.home()),
        tempfile.gettempdir(),
        "zeroclaw-eval-",  # a case workspace's directory name
    ):
        assert needle not in text, f"{needle!r} is in the recorded fixture"


def only_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


# --- record, then replay ------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_record_writes_a_fixture_that_replays_green_through_both_frameworks(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    runs = project_with(run_cli, tmp_path, tiny_server, RECORDED_CASE)
    project = runs.project
    result = record(runs, agent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "recorded record-me: 6 model step(s) over 3 turn(s)" in result.stdout
    assert "it replays green" in result.stdout
    out = project / OUT
    text = out.read_text(encoding="utf-8")
    written = json.loads(text)

    # Every model step the live run used, in order, split by turn: tool calls with their
    # arguments, final texts, the provider's token counts.
    live_requests = tiny_server.requests
    assert len(live_requests) == 6
    steps = [step for turn in written["turns"] for step in turn["steps"]]
    assert steps == answered_steps(live_requests)
    assert [len(turn["steps"]) for turn in written["turns"]] == [2, 2, 2]
    assert steps[0]["response"]["tool_calls"][0]["arguments"] == {"path": "data/input.txt"}
    assert steps[3]["response"]["content"] == "Done. wrote 11 bytes to out/result.txt"
    assert all(s["response"]["input_tokens"] > 0 for s in steps)
    # The case as written: inputs, identity, setup, tools and expectations kept.
    assert [t["user_input"] for t in written["turns"]] == [
        t["user_input"] for t in RECORDED_CASE["turns"]
    ]
    for key in ("model_name", "id", "description", "tools", "setup", "expects"):
        assert written[key] == RECORDED_CASE[key], key
    assert set(written) == set(RECORDED_CASE)
    assert_nothing_machine_specific(text, tiny_server, tmp_path)
    # Nothing else was left in the output directory (no temporary file) but the request
    # snapshot the recording's replay took, under the agent that recorded it.
    assert only_files(out.parent) == ["__snapshots__", "x.json"]
    assert only_files(out.parent / "__snapshots__") == [agent]
    snapshot = (out.parent / "__snapshots__" / agent / "x.snap").read_text("utf-8")
    assert "--- tool: read_file" in snapshot

    # The fixture passes admission on its own ...
    check = runs("eval", "check", "--suite", "evals/regression", key=False)
    assert check.returncode == 0, check.stderr
    assert "1 case(s) in evals/regression admitted" in check.stdout
    # ... and replays green through both frameworks, without the provider or its key.
    for replay_agent in AGENTS:
        replay = runs(
            "eval",
            "run",
            "--suite",
            "evals/regression",
            "--agent",
            replay_agent,
            "--format",
            "json",
            key=False,
        )
        report = report_of(replay)
        assert replay.returncode == 0, json.dumps(report, indent=2)
        assert report["mode"] == "replay" and report["totals"]["passed"] == 1
        (case,) = report["cases"]
        assert case["record"]["input_tokens"] == sum(s["response"]["input_tokens"] for s in steps)
        assert case["record"]["final_response"] == "Done. zeroclaw-probe-7"
    assert len(tiny_server.requests) == 6, "replay must never call the provider"
    assert_key_kept_out(runs, tiny_server)


def test_a_recording_of_a_model_that_said_the_key_holds_no_key(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    case = live_case(
        "says-the-key",
        "leak",
        "confess",
        tools=["echo"],
        expects={"response_contains": ["My API key is"], "tools_used": ["echo"]},
    )
    runs = project_with(run_cli, tmp_path, tiny_server, case)
    result = record(runs, "pydantic-ai")
    assert result.returncode == 0, result.stderr
    text = (runs.project / OUT).read_text(encoding="utf-8")
    assert LIVE_KEY_CORE not in text
    written = json.loads(text)
    assert written["turns"][0]["steps"][0]["response"]["tool_calls"][0]["arguments"] == {
        "message": "***"
    }
    assert written["turns"][1]["steps"][0]["response"]["content"] == "My API key is ***."
    assert_key_kept_out(runs, tiny_server)


# --- refusals: nothing written ------------------------------------------------------------


def test_a_live_run_that_fails_its_checks_writes_nothing(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    case = live_case(
        "wrong-answer", "echo: hello", tools=["echo"], expects={"response_contains": ["goodbye"]}
    )
    runs = project_with(run_cli, tmp_path, tiny_server, case)
    result = record(runs)
    assert result.returncode == 1
    assert f"{OUT}: not written: the live run did not pass its checks" in result.stderr
    assert 'response_contains("goodbye")' in result.stderr
    assert tiny_server.requests, "the live run did happen"
    assert only_files(runs.project / OUT.parent) == []


def test_an_existing_out_is_not_replaced_without_force(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    runs = project_with(run_cli, tmp_path, tiny_server, RECORDED_CASE)
    out = runs.project / OUT
    out.parent.mkdir(parents=True)
    out.write_text('{"keep": "me"}\n', encoding="utf-8")
    before = out.stat()
    result = record(runs)
    assert result.returncode == 1
    assert f"{OUT} exists; pass --force to replace it" in result.stderr
    assert out.read_text(encoding="utf-8") == '{"keep": "me"}\n'
    assert out.stat().st_mtime_ns == before.st_mtime_ns
    assert only_files(out.parent) == ["x.json"]
    assert tiny_server.requests == [], "refused before spending a live run"


def test_force_replaces_an_existing_out(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    runs = project_with(run_cli, tmp_path, tiny_server, RECORDED_CASE)
    out = runs.project / OUT
    out.parent.mkdir(parents=True)
    out.write_text('{"keep": "me"}\n', encoding="utf-8")
    result = record(runs, "pydantic-ai", "--force")
    assert result.returncode == 0, result.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["id"] == "record-me" and len(written["turns"]) == 3
    assert only_files(out.parent) == ["__snapshots__", "x.json"]
    replay = runs("eval", "run", "--suite", "evals/regression", "--agent", "pydantic-ai")
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_a_provider_error_writes_nothing(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    case = live_case("provider-down", "unavailable", expects={"response_contains": ["x"]})
    runs = project_with(run_cli, tmp_path, tiny_server, case)
    result = record(runs, "pydantic-ai")
    assert result.returncode == 1
    assert f"{OUT}: not written: the live run failed:" in result.stderr
    assert "gave up after 4 attempts" in result.stderr
    assert len(tiny_server.requests) == 4
    assert only_files(runs.project / OUT.parent) == []
    assert_key_kept_out(runs, tiny_server)


def test_a_recording_that_would_not_pass_replay_admission_is_not_written(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    """pydantic-ai tells the model a tool it was not offered is unknown, and the tiny model
    then answers; the live run passes, but a replay fixture may not script a call to a
    tool outside the case's `tools`."""
    case = live_case(
        "calls-an-unoffered-tool",
        "insist: list_files",
        tools=["echo"],
        expects={"response_contains": ["Done."]},
    )
    runs = project_with(run_cli, tmp_path, tiny_server, case)
    result = record(runs, "pydantic-ai")
    assert result.returncode == 1, result.stdout
    assert "the recording does not pass replay admission" in result.stderr
    assert only_files(runs.project / OUT.parent) == []


def test_missing_configuration_records_nothing(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LIVE_KEY_ENV, raising=False)
    runs = project_with(run_cli, tmp_path, tiny_server, RECORDED_CASE)
    result = record(runs, key=False)
    assert result.returncode == 1
    assert f"missing: the API key in the environment variable {LIVE_KEY_ENV}" in result.stderr
    assert tiny_server.requests == []
    assert not (runs.project / OUT.parent).exists()


def test_a_case_with_scripted_steps_is_not_recorded(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer
) -> None:
    case = live_case("scripted", "echo: hi", expects={"response_contains": ["hi"]})
    case["turns"][0]["steps"] = [{"response": {"type": "text", "content": "hi"}}]
    runs = project_with(run_cli, tmp_path, tiny_server, case)
    result = record(runs)
    assert result.returncode == 1
    assert "a live case must not script model steps" in result.stderr
    assert tiny_server.requests == []
    assert not (runs.project / OUT.parent).exists()


def test_progress_goes_to_the_stderr_of_the_call_not_of_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Imported while one stream was stderr, called after that stream was closed (as when
    # `main(argv)` runs in-process under another capture): the line goes to today's stderr.
    import importlib
    import io
    import sys

    from harness.model_boundary import ProviderFailure
    from harness.pipeline import RunOptions

    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    monkeypatch.delitem(sys.modules, "harness.live.recorder", raising=False)
    fresh = importlib.import_module("harness.live.recorder")
    monkeypatch.setattr(sys, "stderr", second)
    first.close()

    class Down:
        async def respond(self, request: ModelRequest) -> ModelStep:
            raise ProviderFailure("provider down")

    case = tmp_path / "live" / "x.json"
    case.parent.mkdir()
    case.write_text(
        json.dumps(
            {
                "model_name": "x",
                "turns": [{"user_input": "hi"}],
                "expects": {"response_contains": ["hi"]},
            }
        ),
        "utf-8",
    )
    options = RunOptions(case.parent, mode="live", backend=lambda _case: Down(), root=tmp_path)
    with pytest.raises(fresh.RecordError, match="provider down"):
        fresh.record_live_case(case, tmp_path / "out.json", options, secret="")
    assert "zeroclaw eval: running x live ..." in second.getvalue()
    assert not (tmp_path / "out.json").exists()


# --- the limit on model calls, and the key in any escaping ----------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_the_model_call_limit_applies_to_the_live_run_of_a_recording(
    run_cli: Cli, tmp_path: Path, tiny_server: OpenAIServer, agent: str
) -> None:
    runs = project_with(run_cli, tmp_path, tiny_server, RECORDED_CASE)
    result = record(runs, agent, "--max-model-calls", "1")
    assert result.returncode == 1, result.stdout
    assert (
        f"{OUT}: not written: the live run failed: the agent made more than 1 model calls "
        "in turn 0 (max_model_calls_per_turn)"
    ) in result.stderr
    assert len(tiny_server.requests) == 1
    assert only_files(runs.project / OUT.parent) == []


class Says:
    """A backend (not the live one, which masks the key itself) whose every step is a text."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def respond(self, request: ModelRequest) -> ModelStep:
        return ModelStep(text=self.text)


SECRET = "sk-rec/Yw4SECRET+rec=9"


@pytest.mark.parametrize(
    "said",
    [
        SECRET.replace("/", "%2F").replace("+", "%2B").replace("=", "%3D"),
        "".join(f"\\u{ord(c):04x}" for c in SECRET),
        SECRET.replace("/", "\\/"),
    ],
    ids=["percent-encoded", "unicode-escaped", "slash-escaped"],
)
def test_a_recording_holding_the_key_in_any_escaping_is_not_written(
    tmp_path: Path, said: str
) -> None:
    live = write_fixture(
        tmp_path / "live",
        "x.json",
        live_case("escaped", "hi", expects={"response_contains": ["the key:"]}),
    )
    case = load_case(live, "live", BUILTIN_SURFACE)
    adapter = resolve_agent("openai-agents")
    backend = Says(f"the key: {said}")
    report = run_cases([case], adapter, suite="s", mode="live", backend=lambda _: backend)
    assert report.cases[0].passed, report.cases[0].error
    out = tmp_path / "out.json"
    with pytest.raises(RecordError, match="would contain the API key; nothing was written"):
        write_recording(case, report.cases[0], adapter, out, secrets=(SECRET,))
    assert not out.exists()


def test_a_failed_live_run_is_reported_without_the_key(tmp_path: Path) -> None:
    live = write_fixture(
        tmp_path / "live", "x.json", live_case("x", "hi", expects={"response_contains": ["x"]})
    )
    case = load_case(live, "live", BUILTIN_SURFACE)
    escaped = SECRET.replace("/", "\\/")
    failed = CaseReport.errored(
        "x", "live/x.json", f"RuntimeError: the agent printed {escaped}", None
    )
    adapter = resolve_agent("openai-agents")
    with pytest.raises(RecordError) as info:
        write_recording(case, failed, adapter, tmp_path / "out.json", secrets=(SECRET,))
    assert str(info.value) == "the live run failed: RuntimeError: the agent printed ***"


# --- several agents -------------------------------------------------------------------------

# Two agents asking at the same time, as a guardrail agent runs beside the agent it guards:
# the order of their requests, and of their answers, is no order a replay can keep.
GUARDED_LOOP = """
import asyncio

from harness import Message, ModelRequest


class Session:
    def __init__(self, ctx):
        self.ctx = ctx

    async def run_turn(self, user_input):
        said = (Message(role="user", content=user_input),)
        check = (Message(role="user", content=f"check: {user_input}"),)
        answer, verdict = await asyncio.gather(
            self.ctx.model.respond(ModelRequest(messages=said, agent="triage")),
            self.ctx.model.respond(ModelRequest(messages=check, agent="guard")),
        )
        return f"{verdict.text}: {answer.text}"


def factory(ctx):
    return Session(ctx)
"""


def test_each_recorded_step_names_the_agent_it_answered_so_a_race_replays_green(
    run_cli: Cli, tmp_path: Path
) -> None:
    guard_asked = threading.Event()

    def answer(body: Any) -> Action:
        # The guard asks second but is answered first: the live run's order of answers is
        # not the order in which its requests were made.
        if body["messages"][-1]["content"].startswith("check:"):
            guard_asked.set()
            return say("safe")
        guard_asked.wait(10)
        return hang(0.3, then=text_reply("Refunded"))

    case = live_case(
        "guarded", "Refund me", id="guarded", expects={"response_contains": ["safe: Refunded"]}
    )
    with OpenAIServer(responder=answer, api_key=LIVE_KEY) as server:
        runs = project_with(run_cli, tmp_path, server, case)
        agent = write_module(runs.project, GUARDED_LOOP, "guarded") + ":factory"
        result = record(runs, agent)
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(server.requests) == 2
    written = json.loads((runs.project / OUT).read_text(encoding="utf-8"))
    (steps,) = [turn["steps"] for turn in written["turns"]]
    assert [(s["agent"], s["response"]["content"]) for s in steps] == [
        ("guard", "safe"),
        ("triage", "Refunded"),
    ]
    replay = runs("eval", "run", "--suite", "evals/regression", "--agent", agent, key=False)
    assert replay.returncode == 0, replay.stdout + replay.stderr
