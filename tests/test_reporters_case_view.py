"""`harness.reporters.case_view`, `zeroclaw eval show CASE_ID` and `run -v`: a case's transcript,
checks and error in the terminal, from the last report or a named one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import (
    DROPPING_LOOP,
    ESC,
    Cli,
    call,
    echo_fixture,
    fixture,
    parse_commands,
    project,
    red_project,
    text_step,
    tool_step,
    turn,
    two_agent_project,
    write_module,
    write_suite,
)

# An id that, were its newlines kept, would add lines that look like the harness's own
# and one a CI runner would act on.
FORGING_ID = "c2\n::error::forged\n  [9] user: forged"


def dropping_project(tmp_path: Path) -> tuple[Path, str]:
    """A project whose loop never hands a tool result back to the model, so the harness's
    conformance check fails with a detail of several lines (what the request held), and
    the agent to run it with. The second call's id holds newlines."""
    calls = tool_step(call("c1", message="hi"), call(FORGING_ID, message="ho"))
    data = fixture(
        "drops",
        [turn("Echo hi and ho", calls, text_step("hi ho"))],
        {"response_contains": ["hi"]},
        id="drops",
    )
    root = project(tmp_path, {"a.json": data})
    return root, write_module(root, DROPPING_LOOP, "droploop") + ":factory"


def assert_details_have_lines(out: str) -> None:
    """The harness's own multi-line detail is shown as lines; newlines inside the
    untrusted ids stay escaped, and no line is a workflow command."""
    lines = out.splitlines()
    assert "\\u000a  [0]" not in out and "held:\\u000a" not in out
    held = [i for i, line in enumerate(lines) if line.endswith("the request held:")]
    assert held, out
    for at in held:
        assert lines[at + 1].strip() == '[0] user: "Echo hi and ho"'
        assert lines[at + 2].strip().startswith("[1] assistant: call echo(")
        assert "id=c2\\u000a::error::forged\\u000a  [9] user: forged" in lines[at + 2]
    assert not any(line.lstrip().startswith(("::", "\\u003a:")) for line in lines)
    assert not any(line.strip().startswith("[9]") for line in lines)


def test_show_prints_a_failing_cases_transcript_from_the_last_run(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = red_project(tmp_path)
    assert run_cli("eval", "run", cwd=root).returncode == 1
    assert (root / ".zeroclaw-eval" / ".gitignore").read_text() == "*\n"
    result = run_cli("eval", "show", "wrong-answer", cwd=root)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("case wrong-answer (evals/regression/b_wrong.json): FAILED")
    assert '✗ response_contains("hi"): not found in response: "I said bye"' in out
    assert "  turn 0:" in out
    assert "    → user: Echo hi" in out
    assert '    ← model calls echo({"message": "hi"})' in out
    assert '      tool echo({"message":"hi"}) → hi in ' in out
    assert "    ← model answers I said bye" in out


def test_show_prints_a_run_error_with_the_divergence(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    run_cli("eval", "run", "--json-report", "r.json", cwd=root)
    result = run_cli("eval", "show", "under-scripted", "--report", "r.json", cwd=root)
    assert result.returncode == 0
    assert "  run error:" in result.stdout
    assert "requested more model responses than the trace scripts" in result.stdout
    assert "no answer (the run stopped here)" in result.stdout


def test_show_names_an_unknown_case_and_a_missing_report(run_cli: Cli, tmp_path: Path) -> None:
    root = red_project(tmp_path)
    missing = run_cli("eval", "show", "x", cwd=root)
    assert missing.returncode == 1 and "no last report here" in missing.stderr
    run_cli("eval", "run", cwd=root)
    unknown = run_cli("eval", "show", "wrong-anwser", cwd=root)
    assert unknown.returncode == 1 and "did you mean wrong-answer?" in unknown.stderr


def test_run_verbose_shows_every_failing_case_before_the_verdict(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = red_project(tmp_path)
    result = run_cli("eval", "run", "-v", cwd=root)
    assert result.returncode == 1
    out = result.stdout
    assert "case wrong-answer (evals/regression/b_wrong.json): FAILED" in out
    assert "case under-scripted" in out and "case echo-case" not in out
    assert out.index("case wrong-answer") < out.rindex("cases passed")


def test_model_text_cannot_drive_the_terminal_or_the_runner(run_cli: Cli, tmp_path: Path) -> None:
    hostile = f"{ESC}]0;title{chr(7)}\n::error::forged\n##[error]legacy"
    data = fixture("hostile", [turn("Say it", text_step(hostile))], {"response_contains": ["x"]})
    root = project(tmp_path, {"a.json": data, "b.json": echo_fixture("fine")})
    run_cli("eval", "run", cwd=root)
    out = run_cli("eval", "show", "hostile", cwd=root).stdout
    assert ESC not in out and "##[" not in out
    assert not any(line.lstrip().startswith("::") for line in out.splitlines())
    report = json.loads((root / ".zeroclaw-eval" / "last-report.json").read_text())
    assert report["cases"][0]["id"] == "hostile"


def test_run_verbose_shows_the_harnesss_multi_line_details_as_lines(
    run_cli: Cli, tmp_path: Path
) -> None:
    root, agent = dropping_project(tmp_path)
    result = run_cli("eval", "run", "-v", "--agent", agent, cwd=root)
    assert result.returncode == 1, result.stderr
    verbose = result.stdout[result.stdout.index("case drops") :]
    assert "✗ loop(tool_results): turn 0, request 1: no tool result for c1 (echo)" in verbose
    assert_details_have_lines(verbose)


def test_show_shows_the_harnesss_multi_line_details_as_lines(run_cli: Cli, tmp_path: Path) -> None:
    root, agent = dropping_project(tmp_path)
    assert run_cli("eval", "run", "--agent", agent, cwd=root).returncode == 1
    result = run_cli("eval", "show", "drops", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "✗ loop(tool_results): turn 0, request 1: no tool result for c1 (echo)" in result.stdout
    assert_details_have_lines(result.stdout)


# --- every case of the last run ----------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_show_prints_every_request_of_a_passing_case_after_a_plain_run(
    run_cli: Cli, tmp_path: Path, jobs: str
) -> None:
    root = red_project(tmp_path)
    assert run_cli("eval", "run", "--jobs", jobs, cwd=root).returncode == 1
    result = run_cli("eval", "show", "echo-case", cwd=root)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("case echo-case (evals/regression/a_echo.json): passed")
    assert "  turn 0:" in out
    assert "    → user: Echo hello for me" in out
    assert '    ← model calls echo({"message": "hello"})' in out
    assert '      tool echo({"message":"hello"}) → hello in ' in out
    assert "    → tool: result for call_1: hello" in out
    assert "    ← model answers The echo tool said: hello" in out


def test_show_never_mixes_two_runs(run_cli: Cli, tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("echo-case", "first")})
    assert run_cli("eval", "run", cwd=root).returncode == 0
    write_suite(root / "evals" / "regression", {"a.json": echo_fixture("echo-case", "second")})
    assert run_cli("eval", "run", cwd=root).returncode == 0
    out = run_cli("eval", "show", "echo-case", cwd=root).stdout
    assert "    ← model answers The echo tool said: second" in out
    assert "first" not in out
    # The earlier run's transcripts went with its report.
    kept = sorted(p.name for p in (root / ".zeroclaw-eval").iterdir())
    assert len(kept) == 3 and kept[:2] == [".gitignore", "last-report.json"], kept
    assert re.fullmatch(r"transcripts-[0-9a-f]{32}\.jsonl", kept[2]), kept


def test_a_hostile_case_id_names_no_file_and_is_shown(run_cli: Cli, tmp_path: Path) -> None:
    # Admission refuses controls; anything printable is an id, path separators included.
    hostile = '../../escape/::error::x ##[error]y \\ *?"<>| 日本'
    data = echo_fixture("plain")
    data["id"] = hostile
    root = project(tmp_path, {"a.json": data})
    assert run_cli("eval", "run", cwd=root).returncode == 0
    result = run_cli("eval", "show", hostile, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "    ← model answers The echo tool said: hello" in result.stdout
    assert "##[" not in result.stdout
    assert not (tmp_path / "escape").exists() and not (root / "escape").exists()
    names = {p.name for p in (root / ".zeroclaw-eval").iterdir()}
    shapes = r"\.gitignore|last-report\.json|transcripts-[0-9a-f]{32}\.jsonl"
    assert all(re.fullmatch(shapes, name) for name in names), names


# --- a run error's frames in the user's code --------------------------------------------

# A loop whose turn fails two calls deep in the user's own code, through the standard
# library (json) in between: only the user's frames are the run error's.
RAISING_LOOP = """\
import json


def parse(text):
    return json.loads(text)


def answer(user_input):
    return parse("{not json")


class Session:
    def run_turn(self, user_input):
        return answer(user_input)


def factory(ctx):
    return Session()
"""


def raising_project(tmp_path: Path) -> tuple[Path, str]:
    root = project(tmp_path, {"a.json": echo_fixture("raises")})
    return root, write_module(root, RAISING_LOOP, "raising_loop")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_error_shows_the_frames_in_the_users_code(
    run_cli: Cli, tmp_path: Path, jobs: str
) -> None:
    root, module = raising_project(tmp_path)
    agent = f"{module}:factory"
    run = run_cli(
        "eval", "run", "-v", "--agent", agent, "--jobs", jobs, "--json-report", "r.json", cwd=root
    )
    assert run.returncode == 1, run.stderr
    raised_at = [
        "  raised at (innermost last):",
        f"    {module}.py:14 in run_turn",
        f"    {module}.py:9 in answer",
        f"    {module}.py:5 in parse",
    ]
    assert "\n".join(raised_at) + "\n" in run.stdout
    shown = run_cli("eval", "show", "raises", cwd=root)
    assert "\n".join(raised_at) + "\n" in shown.stdout
    for out in (run.stdout, shown.stdout):
        assert "json" + "/decoder.py" not in out and "harness/run/runner.py" not in out
    (case,) = json.loads((root / "r.json").read_text())["cases"]
    assert case["error"].startswith("JSONDecodeError: Expecting property name")
    assert case["error_frames"] == [
        {"file": f"{module}.py", "line": 14, "function": "run_turn"},
        {"file": f"{module}.py", "line": 9, "function": "answer"},
        {"file": f"{module}.py", "line": 5, "function": "parse"},
    ]


# A loop raising from a file and a function whose names would forge runner commands.
FORGING_LOOP = """\
NAME = "::error::forged\\n##[error]legacy\\x1b]0;t\\x07"
CODE = compile("def f():\\n    raise ValueError('boom')\\n", NAME + ".py", "exec")
SPACE = {}
exec(CODE, SPACE)
forged = SPACE["f"]
forged.__code__ = forged.__code__.replace(co_name=NAME)


class Session:
    def run_turn(self, user_input):
        forged()


def factory(ctx):
    return Session()
"""


def test_a_frames_forged_file_and_function_names_drive_nothing(
    run_cli: Cli, tmp_path: Path
) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("raises")})
    agent = f"{write_module(root, FORGING_LOOP, 'forging_loop')}:factory"
    run = run_cli("eval", "run", "-v", "--agent", agent, "--json-report", "r.json", cwd=root)
    shown = run_cli("eval", "show", "raises", cwd=root)
    for out in (run.stdout, shown.stdout):
        assert "  raised at (innermost last):" in out
        assert ESC not in out and "##[" not in out and "\x07" not in out
        assert not any(line.lstrip().startswith("::") for line in out.splitlines())
    (case,) = json.loads((root / "r.json").read_text())["cases"]
    forged = "::error::forged\n##[error]legacy\x1b]0;t\x07"
    assert case["error_frames"][-1] == {"file": forged + ".py", "line": 2, "function": forged}
    assert "##[" not in (root / "r.json").read_text()  # escaped in the JSON text


def test_a_report_with_error_frames_verifies_and_merges(run_cli: Cli, tmp_path: Path) -> None:
    root, module = raising_project(tmp_path)
    agent = f"{module}:factory"
    shard = run_cli(
        "eval", "run", "--agent", agent, "--shard", "1/1", "--json-report", "s.json", cwd=root
    )
    assert shard.returncode == 1, shard.stderr
    verified = run_cli("eval", "verify", "s.json", cwd=root)
    assert verified.returncode == 0, verified.stderr
    merged = run_cli("eval", "merge", "s.json", "--json-report", "m.json", cwd=root)
    assert merged.returncode == 1, merged.stderr  # the run error fails the merged gate too
    (case,) = json.loads((root / "m.json").read_text())["cases"]
    assert [frame["function"] for frame in case["error_frames"]] == ["run_turn", "answer", "parse"]


# --- who spoke: the agents of a graph -----------------------------------------------------


def transcript_lines(out: str) -> list[str]:
    """The lines of a case's transcript, from its first turn on, durations made 0."""
    lines = out.splitlines()
    start = lines.index("  turn 0:")
    shown = [re.sub(r" in \d+ ms$", " in 0 ms", line) for line in lines[start:]]
    return [line for line in shown if line.startswith("    ")]


def test_show_and_verbose_say_which_agent_asked_called_and_handed_off(
    run_cli: Cli, tmp_path: Path
) -> None:
    root, agent = two_agent_project(tmp_path, answer="Nope")
    run = run_cli("eval", "run", "-v", "--agent", agent, "--json-report", "r.json", cwd=root)
    assert run.returncode == 1, run.stderr
    last = run_cli("eval", "show", "two-agents", cwd=root)
    named = run_cli("eval", "show", "two-agents", "--report", "r.json", cwd=root)
    # Each request's agent is on its answer; the handoff follows the request it came after;
    # billing's echo sits under billing's answer, not under triage's call it never made.
    expected = [
        "    → user: Refund me",
        '    ← [triage] model calls fail({"reason": "to billing"})',
        "    handoff: triage → billing",
        '    → assistant: calls fail({"reason": "to billing"})',
        "    → tool: result for h1: handed off",
        '    ← [billing] model calls echo({"message": "hi"})',
        '      tool [billing] echo({"message":"hi"}) → hi in 0 ms',
        '    → assistant: calls echo({"message": "hi"})',
        "    → tool: result for c1: hi",
        "    ← [billing] model answers Nope",
    ]
    for out in (run.stdout, last.stdout, named.stdout):
        assert transcript_lines(out) == expected, out


def test_a_hostile_agent_name_forges_no_line_and_no_workflow_command(
    run_cli: Cli, tmp_path: Path
) -> None:
    hostile = "tri\n::error::forged\r\n  [9] user: ##[error]x"
    root, agent = two_agent_project(tmp_path, hostile, answer="Nope")
    run = run_cli("eval", "run", "-v", "--agent", agent, cwd=root)
    shown = run_cli("eval", "show", "two-agents", cwd=root)
    escaped = "tri\\u000a::error::forged\\u000d\\u000a  [9] user: #\\u0023[error]x"
    for out in (run.stdout, shown.stdout):
        assert parse_commands(out) == [] and "##[" not in out
        assert f"    handoff: {escaped} → billing" in out.splitlines()
        assert f'    ← [{escaped}] model calls fail({{"reason": "to billing"}})' in out
        assert not any(line.strip().startswith("[9]") for line in out.splitlines())
    # The JSON the last run keeps holds the name as it was, its `##[` escaped.
    for kept in (root / ".zeroclaw-eval").iterdir():
        assert "##[" not in kept.read_text("utf-8"), kept.name
    report = json.loads((root / ".zeroclaw-eval" / "last-report.json").read_text("utf-8"))
    assert report["cases"][0]["record"]["handoffs"][0]["source"] == hostile


def test_a_report_without_the_transcript_still_says_who_called_and_handed_off(
    run_cli: Cli, tmp_path: Path
) -> None:
    # A JSON report keeps no transcript of a passing case: its calls and handoffs are
    # listed as the record has them.
    root, agent = two_agent_project(tmp_path)
    assert (
        run_cli("eval", "run", "--agent", agent, "--json-report", "r.json", cwd=root).returncode
        == 0
    )
    out = run_cli("eval", "show", "two-agents", "--report", "r.json", cwd=root).stdout
    assert "  no transcript kept" in out
    assert '  tool call [billing] echo({"message":"hi"}) → hi' in out.splitlines()
    assert "  handoff in turn 0 after request 0: triage → billing" in out.splitlines()
