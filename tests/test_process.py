"""The process contract: `python -m harness` in a real subprocess, as CI runs it.

Everything else runs `harness.cli.main(argv)` in the test process (the `run_cli` fixture);
this file keeps what only a real process shows: exit codes 0, 1 and 2 as the process's own
status, stdout holding nothing but the document (workflow commands on stderr), a user's
agent module found from the working directory, a live run end to end, and that importing
the harness, `--help` and `check` never import an agent framework, and what a replay run never
imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _openai_server import OpenAIServer
from conftest import (
    ECHO_CASE,
    ESC,
    EXPLODING_LOOP,
    REPO,
    Runs,
    assert_key_kept_out,
    assert_well_formed,
    fixture,
    green_project,
    make_project,
    parse_commands,
    project,
    red_project,
    run_process,
    says,
    text_step,
    turn,
    write_module,
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


# --- exit codes and output streams ----------------------------------------------------------


def test_green_suite_exits_0_with_a_plain_table(tmp_path: Path) -> None:
    result = run_process("eval", "run", cwd=green_project(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "✓ echo-case (evals/regression/a_echo.json)  6/6 checks" in out
    assert "✓ hi (evals/regression/b_hi.json)  2/2 checks" in out
    assert "2/2 cases passed" in out
    assert "exit 0" in out
    assert ESC not in out  # not a terminal: no colour


def test_failing_suite_exits_1_and_lists_failures(tmp_path: Path) -> None:
    result = run_process("eval", "run", cwd=red_project(tmp_path))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("  ✓ echo-case") for line in lines)
    wrong = next(i for i, line in enumerate(lines) if line.startswith("  ✗ wrong-answer"))
    assert "0/2 checks" in lines[wrong]
    assert lines[wrong + 1].startswith('      ✗ response_contains("hi"): not found in response')
    assert lines[wrong + 2].startswith("      ✗ exact_tool_calls(2): 1 tool call(s)")
    under = next(line for line in lines if line.startswith("  ✗ under-scripted"))
    assert "run error" in under
    assert "turn 0 requested more model responses" in under
    assert "1/3 cases passed" in result.stdout


def test_bad_format_is_a_usage_error(tmp_path: Path) -> None:
    result = run_process("eval", "run", "--format", "yaml", cwd=green_project(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "--format" in result.stderr
    assert "yaml" in result.stderr


def test_json_format_puts_only_the_document_on_stdout(tmp_path: Path) -> None:
    result = run_process("eval", "run", "--format", "json", cwd=red_project(tmp_path))
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["schema"] == "zeroclaw-eval/report/v2"
    assert document["exit_code"] == result.returncode
    assert document["suite"] == "evals/regression"
    assert document["kind"] == "regression"
    assert document["agent"] == "openai-agents"
    assert document["totals"] == {
        "cases": 3,
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "not_run": 0,
        "flaky": 0,
    }
    cases = {c["id"]: c for c in document["cases"]}
    assert cases["echo-case"]["fixture"] == "evals/regression/a_echo.json"
    assert cases["echo-case"]["record"]["calls"][0]["arguments"] == '{"message":"hello"}'
    assert "turn 0" in cases["under-scripted"]["error"]
    assert "✓" not in result.stdout


def test_an_exception_message_with_raw_newlines_cannot_forge_a_command(tmp_path: Path) -> None:
    """On GitHub Actions with `--format json`: stdout is the document, the workflow commands
    go to stderr; the user's loop is imported from the working directory."""
    root = project(
        tmp_path,
        {
            "a.json": fixture("explodes", [turn("explode now", text_step("hi"))],
                              {"response_contains": ["hi"]}),
            "b.json": says("fine", "hi", ["hi"]),
        },
    )  # fmt: skip
    module = write_module(root, EXPLODING_LOOP)
    result = run_process(
        "eval", "run", "--agent", f"{module}:factory", "--format", "json",
        cwd=root, env={"GITHUB_ACTIONS": "true"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["totals"] == {
        "cases": 2,
        "passed": 1,
        "failed": 0,
        "errors": 1,
        "not_run": 0,
        "flaky": 0,
    }
    [command] = parse_commands(result.stderr)
    assert_well_formed(command)
    assert command.name == "error"
    assert command.message == (
        "run error: RuntimeError: boom\n::error::forged\n::warning file=x::100%0A"
    )


# --- live mode, end to end ------------------------------------------------------------------


def test_table_output_of_a_live_run(tmp_path: Path, tiny_server: OpenAIServer) -> None:
    project = make_project(tmp_path / "project", tiny_server.base_url, {"a_echo.json": ECHO_CASE})
    runs = Runs(run_process, project)
    result = runs("eval", "run", "--suite", "evals/live", "--mode", "live")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "live-echo" in result.stdout
    assert_key_kept_out(runs, tiny_server)


# --- import hygiene: a fresh interpreter ----------------------------------------------------


def test_importing_harness_does_not_import_an_agent_framework(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import harness, harness.cli, harness.run.runner, harness.reporters.registry\n"
        "for name in harness.__all__:\n"
        "    getattr(harness, name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.'))\n"
        "print(leaked)\n"
        "assert not leaked, leaked\n"
        "assert 'harness.agents.frameworks.openai_agents' not in sys.modules\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_help_does_not_import_an_agent_framework(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from harness.cli import main\n"
        "for argv in (['--help'], ['eval', '--help'], ['eval', 'run', '--help']):\n"
        "    assert main(argv) == 0, argv\n"
        "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'pydantic_ai'))\n"
        "assert not leaked, leaked\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--suite" in result.stdout


def test_check_does_not_import_the_agent_framework(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    code = (
        "import sys\n"
        "from harness.cli import main\n"
        "code = main(['eval', 'check'])\n"
        "assert code == 0, code\n"
        "assert 'agents' not in sys.modules\n"
    )
    result = run_python(code, cwd=root)
    assert result.returncode == 0, result.stderr


# What running a case needs, which the commands that only read a suite never import: the
# event loop, the run's machinery, the reports and the verdict they are made of.
RUN_MACHINERY = (
    "asyncio",
    "harness.pipeline",
    "harness.run.runner",
    "harness.run.watchdog",
    "harness.run.process_pool",
    "harness.io.atomic",
    "harness.verdict",
    "harness.tracking",
    "harness.snapshots",
)


def test_check_and_list_import_no_run_machinery(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    code = (
        "import io, sys\n"
        "from harness.cli import main\n"
        f"machinery = {RUN_MACHINERY!r}\n"
        "def loaded():\n"
        "    return sorted(m for m in sys.modules if m.startswith(machinery))\n"
        "assert main(['eval', 'check']) == 0\n"
        "reporters = sorted(m for m in sys.modules if m.startswith('harness.reporters'))\n"
        "assert (loaded(), reporters) == ([], []), (loaded(), reporters)\n"
        "assert main(['eval', 'list'], stdout=io.StringIO()) == 0\n"
        "assert loaded() == [], loaded()\n"
        "print('ok')\n"
    )
    result = run_python(code, cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "ok"


# What a replay run with an own loop has no use for, even with a judge configured (its
# replies replayed, no case judged): the HTTP client and the live backend that would send,
# the judge's prompt, the baseline's comparison (no baseline given), and `importlib.metadata`
# (the receipt's versions are read from the `.dist-info` itself).
NOT_FOR_A_REPLAY = (
    "httpx",
    "importlib.metadata",
    "harness.live.backend",
    "harness.live.chat_completions",
    "harness.live.provider_limiter",
    "harness.live.provider_settings",
    "harness.judge.prompt",
    # no baseline: nothing to compare the run with, or to gate on
    "harness.tracking",
    # every snapshot holds: no diff to show
    "difflib",
    # one job: no worker pool
    "harness.run.process_pool",
    "harness.run.pool_worker",
    "harness.run.pool_workers",
    "harness.run.fork_server",
)


def test_a_replay_run_of_one_job_imports_no_http_client_no_pool_and_no_metadata_machinery(
    tmp_path: Path,
) -> None:
    root = green_project(tmp_path)
    with (root / "pyproject.toml").open("a", encoding="utf-8") as config:
        config.write('judge_base_url = "http://127.0.0.1:9/v1"\njudge_model = "judge-model"\n')
    (root / "loop.py").write_text(
        (REPO / "examples" / "own_loop" / "loop.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    code = (
        "import io, json, sys\n"
        "sys.path.insert(0, '.')\n"
        "from harness.cli import main\n"
        "out = io.StringIO()\n"
        "assert main(['eval', 'run', '--agent', 'loop:factory', '--format', 'json'],"
        " stdout=out) == 0\n"
        "receipt = json.loads(out.getvalue())['receipt']\n"
        f"unused = {NOT_FOR_A_REPLAY!r}\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(unused))\n"
        "print(receipt['harness_version'], loaded)\n"
    )
    result = run_python(code, cwd=root)
    assert result.returncode == 0, result.stderr
    from importlib.metadata import version

    assert result.stdout.split() == [version("zeroclaw-eval"), "[]"]
