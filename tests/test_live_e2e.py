"""Live mode end to end: `zeroclaw eval run --mode live` in a subprocess, through both agent
frameworks, against a real OpenAI-compatible HTTP server on loopback (no internet).

The server answers like a tiny model (`tiny_model`): a user message that names a tool gets a
tool call, a tool result gets a final text that quotes it. Faults are injected through its
script or its answers: 429 with Retry-After, 500, exhaustion, a hang past the case timeout,
a malformed body. Every test keeps the API key out of everything the CLI prints or writes,
while the server proves it did receive the key.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _openai_server import (
    Action,
    OpenAIServer,
    RecordedRequest,
    hang,
    malformed,
    status,
    text_reply,
    tool_reply,
)
from _support import run_cli, write_fixture

KEY = "sk-test-SECRET-e2e-42"
# The distinctive middle of the key: found even if a prefix were cut off somewhere.
KEY_CORE = "SECRET-e2e-42"
KEY_ENV = "ZC_E2E_API_KEY"
MODEL = "loopback-tiny"
AGENTS = ("openai-agents", "pydantic-ai")

# Token usage the tiny model reports: distinct per kind of step, so sums are checkable.
TOOL_STEP_TOKENS = (11, 3)
TEXT_STEP_TOKENS = (17, 5)
HANG_SECS = 30.0
SLOW_SECS = 1.5


# --- the tiny model -------------------------------------------------------------------------


def say(text: str) -> Action:
    prompt, completion = TEXT_STEP_TOKENS
    return text_reply(text, prompt_tokens=prompt, completion_tokens=completion)


def call_tool(call_id: str, name: str, arguments: dict[str, Any]) -> Action:
    prompt, completion = TOOL_STEP_TOKENS
    return tool_reply(
        [(call_id, name, arguments)], prompt_tokens=prompt, completion_tokens=completion
    )


def tiny_model(body: Any) -> Action:
    """Answers a chat completion request the way a small, obedient model would.

    The last user message is a command `verb: argument`: `echo: X` calls echo with X;
    `write: PATH = TEXT`, `read: PATH` and `list: [DIR]` call the file tools; `remember: X`
    answers OK; `recall` answers the X of an earlier `remember:` found in the history the
    agent sent; `say: X` answers X. A tool the request does not offer is never called.
    After tool results it answers `Done. <results>`. `hang`, `malformed` and `unavailable`
    misbehave (the last two echo the API key back, as careless servers do).
    """
    messages = body["messages"]
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    last = messages[-1]
    if last["role"] == "tool":
        results: list[str] = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            results.insert(0, message["content"])
        return say("Done. " + " | ".join(results))
    verb, _, argument = (last.get("content") or "").partition(":")
    verb, argument = verb.strip().lower(), argument.strip()
    # Unique per request within a conversation, as a provider's ids are.
    call_id = f"call_{len(messages)}"
    if verb == "echo":
        name, arguments = "echo", {"message": argument}
    elif verb == "write":
        path, _, content = argument.partition("=")
        name, arguments = "write_file", {"path": path.strip(), "content": content.strip()}
    elif verb == "read":
        name, arguments = "read_file", {"path": argument}
    elif verb == "list":
        name, arguments = "list_files", ({"path": argument} if argument else {})
    elif verb == "remember":
        return say("OK")
    elif verb == "recall":
        for message in messages:
            said = message.get("content") or ""
            if message["role"] == "user" and said.lower().startswith("remember:"):
                return say(said.partition(":")[2].strip())
        return say("I was never told anything to remember.")
    elif verb == "say":
        return say(argument)
    elif verb == "leak":
        name, arguments = "echo", {"message": KEY}
    elif verb == "confess":
        return say(f"My API key is {KEY}.")
    elif verb == "insist":  # calls a tool whether it was offered or not
        return call_tool(call_id, argument, {})
    elif verb == "hang":
        return hang(HANG_SECS)
    elif verb == "slow":  # answers, but only after SLOW_SECS
        return hang(SLOW_SECS, then=say(argument))
    elif verb == "malformed":
        return malformed(f"<html>502 upstream proxy error (request key {KEY})</html>")
    elif verb == "unavailable":
        return status(
            500,
            {"error": {"message": f"overloaded; retry later (key {KEY})"}},
            headers={"Retry-After": "0"},
        )
    else:
        return say("I cannot do that.")
    if name not in offered:
        return say(f"I have no {name} tool.")
    return call_tool(call_id, name, arguments)


def user_inputs(request: RecordedRequest) -> list[str]:
    body = request.json if isinstance(request.json, dict) else {}
    return [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]


def requests_for(server: OpenAIServer, first_user_input: str) -> list[RecordedRequest]:
    """The requests of the conversation that began with `first_user_input`."""
    return [r for r in server.requests if user_inputs(r)[:1] == [first_user_input]]


def offered_tools(request: RecordedRequest) -> list[str]:
    return sorted(t["function"]["name"] for t in request.json.get("tools") or [])


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    # api_key: anything without `Authorization: Bearer KEY` gets a 401, as a provider would.
    with OpenAIServer(responder=tiny_model, api_key=KEY) as s:
        yield s


# --- projects and cases ---------------------------------------------------------------------


def live_case(name: str, *inputs: str, expects: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A live fixture: turns without steps."""
    return {
        "model_name": name,
        "turns": [{"user_input": text} for text in inputs],
        "expects": expects,
        **extra,
    }


ECHO_INPUT = "echo: zeroclaw-probe-7"
REMEMBER_INPUT = "remember: heron-19"
WRITE_INPUT = "write: notes/out.txt = zeroclaw-note-5"

ECHO_CASE = live_case(
    "live-echo",
    ECHO_INPUT,
    tools=["echo"],
    expects={
        "tools_used": ["echo"],
        "exact_tool_calls": 1,
        "all_tools_succeeded": True,
        "tool_arguments_contain": [{"tool": "echo", "needle": "zeroclaw-probe-7"}],
        "tool_results_contain": [{"tool": "echo", "needle": "zeroclaw-probe-7"}],
        "response_contains": ["zeroclaw-probe-7"],
    },
)
MULTI_TURN_CASE = live_case(
    "live-multi-turn-recall",
    REMEMBER_INPUT,
    "recall",
    expects={"response_matches": ["\\Aheron-19\\Z"], "max_tool_calls": 0},
)
# Needs the workspace expectations and the runner grading the workspace the run left.
WRITE_CASE = live_case(
    "live-write-file",
    WRITE_INPUT,
    tools=["write_file"],
    expects={
        "tools_used": ["write_file"],
        "all_tools_succeeded": True,
        "workspace": {
            "file_exists": ["notes/out.txt"],
            "file_contains": {"notes/out.txt": ["zeroclaw-note-5"]},
        },
        "budget": {"max_llm_calls": 2, "max_total_tokens": 100},
    },
)
SUITE = {
    "a_echo.json": ECHO_CASE,
    "b_multi_turn.json": MULTI_TURN_CASE,
    "c_write_file.json": WRITE_CASE,
}


def make_project(
    root: Path,
    base_url: str | None,
    cases: dict[str, dict[str, Any]],
    *,
    timeout: float = 20,
    model: str | None = MODEL,
    extra: str = "",
) -> Path:
    """A project whose `[tool.zeroclaw.eval]` points live mode at `base_url`, with the
    `evals/live` suite `cases`. None leaves a setting out."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ['[project]\nname = "demo"\n', "[tool.zeroclaw.eval]"]
    if base_url is not None:
        lines.append(f'live_base_url = "{base_url}"')
    if model is not None:
        lines.append(f'live_model = "{model}"')
    lines.append(f'live_api_key_env = "{KEY_ENV}"')
    lines.append(f"case_timeout_secs = {timeout}")
    if extra:
        lines.append(extra)
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, data in cases.items():
        write_fixture(root / "evals" / "live", name, data)
    return root


class Runs:
    """Runs the CLI in one project and keeps everything it printed, for the key check."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.outputs: list[str] = []

    def __call__(
        self, *args: str | Path, env: dict[str, str] | None = None, key: bool = True
    ) -> subprocess.CompletedProcess[str]:
        environment = {KEY_ENV: KEY} if key else {}
        environment.update(env or {})
        result = run_cli(*args, cwd=self.project, env=environment, timeout=120)
        self.outputs += [result.stdout, result.stderr]
        return result

    def live(
        self,
        agent: str,
        *extra: str | Path,
        env: dict[str, str] | None = None,
        key: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        return self(
            "eval",
            "run",
            "--suite",
            "evals/live",
            "--mode",
            "live",
            "--agent",
            agent,
            "--format",
            "json",
            *extra,
            env=env,
            key=key,
        )


def report_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        document: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"stdout is not a JSON report:\n{result.stdout}\nstderr:\n{result.stderr}")
    return document


def cases_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


def assert_key_kept_out(runs: Runs, server: OpenAIServer | None = None) -> None:
    """No byte of output and no file under the project holds the key; the server (when
    given) did receive it, so this check can fail."""
    files = [p for p in runs.project.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files, "nothing to check"
    for path in files:
        data = path.read_bytes()
        assert KEY_CORE.encode() not in data, f"the API key leaked into {path}"
    for text in runs.outputs:
        assert KEY_CORE not in text, f"the API key leaked into the output:\n{text}"
    if server is not None:
        assert server.requests, "the server was never asked"
        for request in server.requests:
            assert request.headers.get("authorization") == f"Bearer {KEY}"


def assert_nothing_ran(
    result: subprocess.CompletedProcess[str], server: OpenAIServer, *reports: Path
) -> None:
    assert result.returncode == 1, result.stderr
    assert server.requests == [], "a refused run still called the provider"
    assert result.stdout.strip() == "", result.stdout
    for report in reports:
        assert not report.exists(), f"{report} written by a run that should not have started"


# --- success through both frameworks -------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_live_suite_passes_through_both_frameworks(
    tmp_path: Path, server: OpenAIServer, agent: str
) -> None:
    project = make_project(tmp_path / "project", server.base_url, SUITE)
    runs = Runs(project)
    result = runs.live(agent, "--json-report", "reports/live.json")
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2) + result.stderr
    assert report["mode"] == "live" and report["kind"] == "live" and report["agent"] == agent
    assert report["totals"] == {"cases": 3, "passed": 3, "failed": 0, "errors": 0}
    assert json.loads((project / "reports/live.json").read_text(encoding="utf-8")) == report
    cases = cases_by_id(report)

    echo = cases["live-echo"]["record"]
    assert echo["final_response"] == "Done. zeroclaw-probe-7"
    assert [
        (c["name"], json.loads(c["arguments"]), c["result"], c["success"]) for c in echo["calls"]
    ] == [("echo", {"message": "zeroclaw-probe-7"}, "zeroclaw-probe-7", True)]
    recall = cases["live-multi-turn-recall"]["record"]
    assert recall["turn_responses"] == ["OK", "heron-19"] and recall["calls"] == []
    written = cases["live-write-file"]
    assert written["passed"], written
    workspace_grades = [g for g in written["grades"] if g["category"] == "side_effect"]
    assert len(workspace_grades) == 2 and all(g["passed"] for g in workspace_grades)

    # Tokens are the provider's usage summed over the case's model calls.
    tool, text = TOOL_STEP_TOKENS, TEXT_STEP_TOKENS
    expected = {
        "live-echo": (2, tool[0] + text[0], tool[1] + text[1]),
        "live-multi-turn-recall": (2, 2 * text[0], 2 * text[1]),
        "live-write-file": (2, tool[0] + text[0], tool[1] + text[1]),
    }
    for case_id, (calls, input_tokens, output_tokens) in expected.items():
        record = cases[case_id]["record"]
        assert (record["model_calls"], record["input_tokens"], record["output_tokens"]) == (
            calls,
            input_tokens,
            output_tokens,
        ), case_id
    # One request per model call, nothing retried; each case offered exactly its tools.
    assert len(server.requests) == 6
    assert {tuple(offered_tools(r)) for r in requests_for(server, ECHO_INPUT)} == {("echo",)}
    assert {tuple(offered_tools(r)) for r in requests_for(server, WRITE_INPUT)} == {("write_file",)}
    # A case without `tools` gets the built-in tools live_allowed_tools allows (not `fail`).
    assert {tuple(offered_tools(r)) for r in requests_for(server, REMEMBER_INPUT)} == {
        ("echo", "list_files", "read_file", "write_file")
    }
    # The second turn was sent the first turn's history.
    last = requests_for(server, REMEMBER_INPUT)[-1]
    assert user_inputs(last) == [REMEMBER_INPUT, "recall"]
    assert all(r.json["model"] == MODEL for r in server.requests)
    assert_key_kept_out(runs, server)


def test_table_output_of_a_live_run(tmp_path: Path, server: OpenAIServer) -> None:
    project = make_project(tmp_path / "project", server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(project)
    result = runs("eval", "run", "--suite", "evals/live", "--mode", "live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "live-echo" in result.stdout
    assert_key_kept_out(runs, server)


# --- fault injection ------------------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_one_429_and_one_500_are_retried_and_the_case_passes(
    tmp_path: Path, server: OpenAIServer, agent: str
) -> None:
    server.enqueue(
        status(429, {"error": {"message": "rate limited"}}, headers={"Retry-After": "1"}),
        status(500, {"error": {"message": "internal error"}}),
    )
    project = make_project(tmp_path / "project", server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(project)
    result = runs.live(agent)
    report = report_of(result)
    assert result.returncode == 0, json.dumps(report, indent=2) + result.stderr
    (case,) = report["cases"]
    assert case["passed"] and case["error"] is None
    server.assert_drained()
    # Two model calls, three attempts for the first: the server saw the two extra requests,
    # each carrying the same request again.
    assert case["record"]["model_calls"] == 2
    requests = server.requests
    assert len(requests) == 4
    assert requests[0].json == requests[1].json == requests[2].json
    # Only the answered calls' usage counts.
    assert case["record"]["input_tokens"] == TOOL_STEP_TOKENS[0] + TEXT_STEP_TOKENS[0]
    # Retry-After: 1 was honoured before the second attempt.
    assert case["duration_ms"] >= 1000
    assert_key_kept_out(runs, server)


def test_exhausted_retries_are_a_run_error_naming_the_attempts(
    tmp_path: Path, server: OpenAIServer
) -> None:
    cases = {
        "a_unavailable.json": live_case(
            "always-500", "unavailable: now", expects={"response_contains": ["never"]}
        ),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", server.base_url, cases)
    runs = Runs(project)
    result = runs.live("openai-agents")
    report = report_of(result)
    assert result.returncode == 1
    by_id = cases_by_id(report)
    error = by_id["always-500"]["error"]
    assert error is not None and by_id["always-500"]["passed"] is False
    assert "gave up after 4 attempts" in error and "HTTP 500" in error, error
    assert "overloaded" in error  # the provider's own reason, key scrubbed
    assert len(requests_for(server, "unavailable: now")) == 4
    # The other case still ran, and passed.
    assert by_id["live-echo"]["passed"], by_id["live-echo"]
    assert report["totals"] == {"cases": 2, "passed": 1, "failed": 0, "errors": 1}
    assert_key_kept_out(runs, server)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_hang_becomes_a_timeout_run_error_and_the_suite_completes(
    tmp_path: Path, server: OpenAIServer, agent: str
) -> None:
    cases = {
        "a_hang.json": live_case("hangs", "hang", expects={"response_contains": ["never"]}),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", server.base_url, cases, timeout=2)
    runs = Runs(project)
    start = time.monotonic()
    result = runs.live(agent)
    elapsed = time.monotonic() - start
    report = report_of(result)
    assert result.returncode == 1
    assert elapsed < 30, f"the whole run took {elapsed:.1f}s for a 2s case timeout"
    by_id = cases_by_id(report)
    hung = by_id["hangs"]
    assert hung["error"] is not None and "timed out after 2s" in hung["error"], hung["error"]
    assert "turn 0" in hung["error"]
    # Within the configured time (plus the grace a cancelled call takes to unwind), not
    # after the server's 30 s hang.
    assert 1900 <= hung["duration_ms"] < 2000 + 3000, hung["duration_ms"]
    assert requests_for(server, "hang")
    # The next case still ran, and passed.
    assert by_id["live-echo"]["passed"], by_id["live-echo"]
    assert [c["id"] for c in report["cases"]] == ["hangs", "live-echo"]
    assert_key_kept_out(runs, server)


def test_timeout_on_the_command_line_also_bounds_each_model_call(
    tmp_path: Path, server: OpenAIServer
) -> None:
    """`--timeout` replaces case_timeout_secs for the calls too: a model slower than the
    configured 1 s but well within the 20 s asked for on the command line is waited for."""
    case = live_case(
        "slow-model", "slow: patience-3", expects={"response_contains": ["patience-3"]}
    )
    project = make_project(tmp_path / "project", server.base_url, {"a.json": case}, timeout=1)
    runs = Runs(project)
    report = report_of(runs.live("openai-agents", "--timeout", "20"))
    (result,) = report["cases"]
    assert result["passed"], result["error"]
    assert len(server.requests) == 1  # waited for, not timed out and retried
    # Without --timeout, the configured second bounds the turn.
    report = report_of(runs.live("openai-agents"))
    assert "timed out after 1s in turn 0" in report["cases"][0]["error"]
    assert_key_kept_out(runs, server)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_malformed_body_is_a_clear_run_error(
    tmp_path: Path, server: OpenAIServer, agent: str
) -> None:
    cases = {
        "a_malformed.json": live_case(
            "malformed-body", "malformed", expects={"response_contains": ["never"]}
        ),
        "b_echo.json": ECHO_CASE,
    }
    project = make_project(tmp_path / "project", server.base_url, cases)
    runs = Runs(project)
    result = runs.live(agent)
    report = report_of(result)
    assert result.returncode == 1
    by_id = cases_by_id(report)
    error = by_id["malformed-body"]["error"]
    assert error is not None
    assert "malformed response" in error and "not JSON" in error, error
    assert "upstream proxy error" in error  # an excerpt of what came back
    assert len(requests_for(server, "malformed")) == 1  # not retried: retrying cannot mend it
    assert by_id["live-echo"]["passed"]
    assert_key_kept_out(runs, server)


# --- refusals before anything runs ----------------------------------------------------------

MISSING_BASE_URL = "live_base_url"
MISSING_KEY = f"the API key in the environment variable {KEY_ENV}"


@pytest.mark.parametrize(
    ("has_url", "has_key", "missing"),
    [
        (False, True, [MISSING_BASE_URL]),
        (True, False, [MISSING_KEY]),
        (False, False, [MISSING_BASE_URL, MISSING_KEY]),
    ],
    ids=["no-base-url", "no-key", "neither"],
)
def test_missing_configuration_names_exactly_what_is_missing(
    tmp_path: Path,
    server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    has_url: bool,
    has_key: bool,
    missing: list[str],
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    base_url = server.base_url if has_url else None
    project = make_project(tmp_path / "project", base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(project)
    result = runs.live("openai-agents", "--json-report", "report.json", key=has_key)
    assert_nothing_ran(result, server, project / "report.json")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert "live mode is not configured" in line
    for item in missing:
        assert item in line, line
    for item in {MISSING_BASE_URL, MISSING_KEY, "live_model"} - set(missing):
        assert item not in line, f"{item!r} is configured but reported missing: {line}"
    assert_key_kept_out(runs)


def test_a_blank_key_counts_as_missing(tmp_path: Path, server: OpenAIServer) -> None:
    project = make_project(tmp_path / "project", server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(project)
    result = runs.live("pydantic-ai", env={KEY_ENV: "   "})
    assert_nothing_ran(result, server)
    assert MISSING_KEY in result.stderr


def test_a_live_fixture_with_scripted_steps_is_refused_at_admission(
    tmp_path: Path, server: OpenAIServer
) -> None:
    scripted = live_case("scripted", "echo: hi", expects={"response_contains": ["hi"]})
    scripted["turns"][0]["steps"] = [{"response": {"type": "text", "content": "hi"}}]
    project = make_project(
        tmp_path / "project", server.base_url, {"a_echo.json": ECHO_CASE, "b.json": scripted}
    )
    runs = Runs(project)
    result = runs.live("openai-agents", "--json-report", "report.json")
    assert_nothing_ran(result, server, project / "report.json")
    assert "b.json: $.turns[0].steps" in result.stderr
    assert "a live case must not script model steps" in result.stderr
    assert "nothing was run" in result.stderr


@pytest.mark.parametrize("tool", ["shell", "bash"])
def test_a_command_running_tool_in_a_case_is_refused_saying_why(
    tmp_path: Path, server: OpenAIServer, tool: str
) -> None:
    case = live_case(
        "wants-a-shell", "echo: hi", tools=["echo", tool], expects=ECHO_CASE["expects"]
    )
    project = make_project(tmp_path / "project", server.base_url, {"a.json": case})
    runs = Runs(project)
    result = runs.live("pydantic-ai", "--json-report", "report.json")
    assert_nothing_ran(result, server, project / "report.json")
    assert f"a.json: $.tools[1]: tool {tool!r} is refused" in result.stderr
    assert "command-running tool would let the model run anything" in result.stderr


def test_a_command_running_tool_in_the_configuration_is_refused(
    tmp_path: Path, server: OpenAIServer
) -> None:
    project = make_project(
        tmp_path / "project",
        server.base_url,
        {"a_echo.json": ECHO_CASE},
        extra='live_allowed_tools = ["echo", "shell"]',
    )
    runs = Runs(project)
    result = runs.live("openai-agents", "--json-report", "report.json")
    assert_nothing_ran(result, server, project / "report.json")
    assert "live_allowed_tools[1]: tool 'shell' is refused" in result.stderr
    assert "command-running tool" in result.stderr


def test_live_allowed_tools_narrows_what_a_case_is_offered(
    tmp_path: Path, server: OpenAIServer
) -> None:
    project = make_project(
        tmp_path / "project",
        server.base_url,
        {"a_write.json": WRITE_CASE},
        extra='live_allowed_tools = ["echo"]',
    )
    runs = Runs(project)
    report = report_of(runs.live("openai-agents"))
    (case,) = report["cases"]
    # write_file is the case's tool, but the configuration does not allow it: never offered,
    # so the tiny model cannot call it and the case fails its checks.
    assert not case["passed"] and case["error"] is None
    assert {tuple(offered_tools(r)) for r in server.requests} == {()}
    assert case["record"]["calls"] == []


# --- the key --------------------------------------------------------------------------------


def test_the_key_is_in_no_report_output_or_file(tmp_path: Path, server: OpenAIServer) -> None:
    """Every report format, annotations, the step summary and history, for a suite with a
    passing case and failures whose provider answers echo the key."""
    cases = {
        **SUITE,
        "d_unavailable.json": live_case(
            "always-500", "unavailable", expects={"response_contains": ["x"]}
        ),
        "e_malformed.json": live_case(
            "malformed-body", "malformed", expects={"response_contains": ["x"]}
        ),
        # The model itself says the key: in tool arguments, then in a final text.
        "f_says_key.json": live_case(
            "says-the-key",
            "leak",
            "confess",
            tools=["echo"],
            expects={"response_contains": ["My API key is"], "tools_used": ["echo"]},
        ),
    }
    project = make_project(tmp_path / "project", server.base_url, cases)
    runs = Runs(project)
    step_summary = project / "github" / "step_summary.md"
    step_summary.parent.mkdir()
    for agent, fmt in (
        ("openai-agents", "table"),
        ("pydantic-ai", "junit"),
        ("pydantic-ai", "json"),
    ):
        reports = project / "reports" / f"{agent}-{fmt}"
        result = runs(
            "eval",
            "run",
            "--suite",
            "evals/live",
            "--mode",
            "live",
            "--agent",
            agent,
            "--format",
            fmt,
            "--json-report",
            reports / "report.json",
            "--junit-xml",
            reports / "junit.xml",
            "--summary",
            reports / "summary.md",
            "--history",
            reports / "history.jsonl",
            "--annotations",
            "github",
            env={"GITHUB_STEP_SUMMARY": str(step_summary)},
        )
        assert result.returncode == 1, result.stderr
        for name in ("report.json", "junit.xml", "summary.md", "history.jsonl"):
            assert (reports / name).stat().st_size > 0, name
        report = json.loads((reports / "report.json").read_text(encoding="utf-8"))
        by_id = cases_by_id(report)
        # The failures happened and were reported, just without the key.
        assert "***" in by_id["always-500"]["error"]
        assert "***" in by_id["malformed-body"]["error"]
        said = by_id["says-the-key"]
        assert said["passed"], said
        assert said["record"]["calls"][0]["arguments"] == '{"message":"***"}'
        assert said["record"]["turn_responses"] == ["Done. ***", "My API key is ***."]
        assert by_id["live-echo"]["passed"]
    assert "::error" in "".join(runs.outputs)
    assert step_summary.stat().st_size > 0
    # The server did receive the key on every request (it answers 401 otherwise) ...
    assert_key_kept_out(runs, server)
    # ... but only there: the model's scrubbed words went back into the conversation.
    assert len(server.requests) > 20
    assert not any(KEY_CORE in r.text for r in server.requests)
