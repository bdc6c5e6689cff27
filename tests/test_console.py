"""The `zeroclaw` process against an agent that misbehaves as a process: writes to stdout,
leaves threads running, blocks while being built, and against real SIGINT and SIGTERM.
Each runs `python -m harness` in a real subprocess (`harness.console.main`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    CI_VARIABLE_PREFIXES,
    FAITHFUL_LOOP,
    REPO,
    child_environment,
    echo_fixture,
    green_project,
    project,
    run_process,
    start_reported_run,
    write_module,
)

# Subprocess runs with a bounded wait: a hang fails the test instead of holding the suite.
pytestmark = pytest.mark.timeout(120)

NOISY_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n"
    "        import os, subprocess, sys\n"
    "        print('agent print ::error::forged')\n"
    "        sys.stdout.flush()\n"
    "        os.write(1, b'raw write to fd 1\\n')\n"
    "        subprocess.run([sys.executable, '-c', 'print(\"child process output\")'])\n",
)


def test_agent_writes_to_stdout_reach_stderr_and_the_document_stays_whole(
    tmp_path: Path,
) -> None:
    root = green_project(tmp_path)
    module = write_module(root, NOISY_LOOP)
    agent = f"{module}:factory"
    result = run_process("eval", "run", "--agent", agent, "--format", "json", cwd=root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)  # the document alone: nothing else on stdout
    assert document["totals"]["passed"] == 2
    for noise in ("agent print ::error::forged", "raw write to fd 1", "child process output"):
        assert noise not in result.stdout
        assert noise in result.stderr


def test_junit_on_stdout_is_the_document_alone_whatever_the_agent_prints(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    root = green_project(tmp_path)
    module = write_module(root, NOISY_LOOP)
    result = run_process(
        "eval", "run", "--agent", f"{module}:factory", "--format", "junit", cwd=root
    )
    assert result.returncode == 0, result.stderr
    assert len(list(ET.fromstring(result.stdout).iter("testcase"))) == 2


LINGERING_THREAD_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n"
    "        import threading, time\n"
    "        threading.Thread(target=time.sleep, args=(600,), daemon=False).start()\n",
)


def test_a_non_daemon_thread_left_by_the_agent_does_not_keep_the_process_alive(
    tmp_path: Path,
) -> None:
    root = green_project(tmp_path)
    module = write_module(root, LINGERING_THREAD_LOOP)
    started = time.monotonic()
    result = run_process(
        "eval",
        "run",
        "--agent",
        f"{module}:factory",
        "--json-report",
        "r.json",
        cwd=root,
        timeout=60,
    )
    assert time.monotonic() - started < 60
    assert result.returncode == 0, result.stderr
    assert "not waiting for 2 thread(s) the agent left running" in result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2


TO_THREAD_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n"
    "        import asyncio, time\n"
    "        await asyncio.to_thread(time.sleep, 600)\n",
)


def test_a_timed_out_turn_in_a_worker_thread_does_not_hang_the_exit(tmp_path: Path) -> None:
    root = project(tmp_path, {"a.json": echo_fixture("echo-case")})
    module = write_module(root, TO_THREAD_LOOP)
    started = time.monotonic()
    result = run_process(
        "eval", "run", "--agent", f"{module}:factory", "--timeout", "1", cwd=root, timeout=60
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    assert "timed out after 1s in turn 0" in result.stdout


BLOCKING_FACTORY = """
import time


def build_agent():
    time.sleep(600)
"""


def test_a_framework_agent_factory_that_blocks_is_a_bounded_error(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, BLOCKING_FACTORY)
    started = time.monotonic()
    result = run_process(
        "eval",
        "run",
        "--agent",
        f"openai-agents:{module}:build_agent",
        "--timeout",
        "2",
        cwd=root,
        timeout=90,
    )
    assert time.monotonic() - started < 60
    assert result.returncode == 1
    assert "still not built after 2s" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_agent_module_that_blocks_on_import_is_a_bounded_error(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, "import time\ntime.sleep(600)\n")
    result = run_process(
        "eval", "check", "--agent", f"{module}:factory", "--timeout", "1", cwd=root, timeout=60
    )
    assert result.returncode == 1
    assert "still not built after 1s" in result.stderr


# --- real signals ---------------------------------------------------------------------------

# Announces the turn (a file appears) and then blocks its thread, as a hung agent does.
STALLING_LOOP = """
import os, pathlib, time


class Session:
    async def run_turn(self, user_input):
        pathlib.Path(os.environ["ZC_MARKER"]).write_text("in a turn")
        time.sleep(600)
        return "never"


def factory(ctx):
    return Session()
"""

# The agent is fine, but grading blocks: the user's module replaces the grader, which no
# real grader would do, to hold the run inside grading for the signal.
STALLING_GRADER = (
    FAITHFUL_LOOP
    + """
import os, pathlib, time
import harness.run.runner

_grade = harness.run.runner.grade


def _slow_grade(*args, **kwargs):
    pathlib.Path(os.environ["ZC_MARKER"]).write_text("grading")
    time.sleep(600)
    return _grade(*args, **kwargs)


harness.run.runner.grade = _slow_grade
"""
)


def _start(root: Path, module: str, marker: Path) -> subprocess.Popen[str]:
    return start_reported_run(root, f"{module}:factory", env={"ZC_MARKER": str(marker)})


def _wait_for(marker: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the agent never started its turn"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("source", "signum", "code"),
    [
        (STALLING_LOOP, signal.SIGTERM, 143),
        (STALLING_LOOP, signal.SIGINT, 130),
        (STALLING_GRADER, signal.SIGTERM, 143),
        (STALLING_GRADER, signal.SIGINT, 130),
    ],
    ids=["sigterm-in-a-turn", "sigint-in-a-turn", "sigterm-grading", "sigint-grading"],
)
def test_a_signal_stops_the_run_promptly_and_leaves_the_previous_reports_intact(
    tmp_path: Path, source: str, signum: int, code: int
) -> None:
    root = green_project(tmp_path)
    reports = root / "reports"
    reports.mkdir()
    (reports / "junit.xml").write_text("<previous/>")
    (reports / "report.json").write_text('{"previous": true}')
    module = write_module(root, source)
    marker = tmp_path / "marker"
    process = _start(root, module, marker)
    _wait_for(marker, process)
    sent = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    assert time.monotonic() - sent < 10  # promptly, though the case's thread still blocks
    assert process.returncode == code, err
    name = signal.Signals(signum).name
    assert (
        f"zeroclaw eval: interrupted by {name}; not written (any previous file left as it "
        "was): reports/junit.xml, reports/report.json"
    ) in err
    assert "Traceback" not in err
    assert (reports / "junit.xml").read_text() == "<previous/>"
    assert (reports / "report.json").read_text() == '{"previous": true}'
    assert sorted(p.name for p in reports.iterdir()) == ["junit.xml", "report.json"]


# A SIGTERM as the command line's modules are still being imported (a CI job cancelled as
# it starts): sent from the import itself, so it falls there every time.
SIGNAL_AS_THE_CLI_IMPORTS = """
import importlib.abc, signal, sys


class Cancelled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "harness.cli":
            signal.raise_signal(signal.SIGTERM)
        return None


sys.meta_path.insert(0, Cancelled())
sys.argv = ["zeroclaw", "eval", "run"]
from harness.console import main

main()
"""


def test_a_signal_as_the_command_line_imports_is_said_not_a_silent_death(tmp_path: Path) -> None:
    # The handlers were installed only once the command line had been imported: the
    # signal's default action ended the process without a word.
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_AS_THE_CLI_IMPORTS],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 143, done.stderr
    assert done.stderr == "zeroclaw eval: interrupted by SIGTERM; no report was written\n"


# The run ends and its reports are written; the exit then waits on what the agent left (an
# exit handler that takes its time, a thread never stopped) when the signal comes.
LINGERING_AT_EXIT = (
    FAITHFUL_LOOP
    + """
import atexit, os, pathlib, threading, time


def _slow_exit():
    pathlib.Path(os.environ["ZC_MARKER"]).write_text("exiting")
    time.sleep(600)


atexit.register(_slow_exit)
threading.Thread(target=time.sleep, args=(600,), name="left running").start()
"""
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_as_the_process_exits_ends_it_at_once_and_keeps_the_reports(
    tmp_path: Path, signum: int
) -> None:
    # It was a traceback out of the exit, which then waited for the agent's thread.
    root = green_project(tmp_path)
    module = write_module(root, LINGERING_AT_EXIT)
    marker = tmp_path / "marker"
    process = _start(root, module, marker)
    try:
        _wait_for(marker, process)
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    name = signal.Signals(signum).name
    assert f"zeroclaw eval: interrupted by {name} as it exited, after the run (exit code 0)" in err
    report = json.loads((root / "reports" / "report.json").read_text())
    assert report["totals"]["passed"] == 2  # written before the exit began


def test_a_closed_stdout_still_writes_the_report_files(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    read, write = os.pipe()
    os.close(read)  # nobody will read stdout
    try:
        result = subprocess.run(
            [
                *(sys.executable, "-m", "harness", "eval", "run", "--format", "json"),
                *("--junit-xml", "j.xml", "--json-report", "r.json"),
            ],
            cwd=root,
            env=environment,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert result.returncode == 1
    assert "stdout: cannot write the report" in result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2
    assert (root / "j.xml").read_text().startswith("<?xml")


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_report_files_get_the_umask_permissions(tmp_path: Path, mask: int, mode: int) -> None:
    root = green_project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    subprocess.run(
        [sys.executable, "-m", "harness", "eval", "run", "--json-report", "r.json"],
        cwd=root,
        env=environment,
        capture_output=True,
        timeout=120,
        check=True,
        preexec_fn=lambda: os.umask(mask),  # the child's umask alone
    )
    assert (root / "r.json").stat().st_mode & 0o777 == mode


# The agent says, as each case runs, whether the garbage collector is on: the start-up
# pauses it (its imports make no garbage), never what runs the agent, here or in a worker.
COLLECTOR_LOOP = FAITHFUL_LOOP.replace(
    "    async def run_turn(self, user_input):\n",
    "    async def run_turn(self, user_input):\n"
    "        import gc, os\n"
    "        with open(os.environ['COLLECTOR_SEEN'], 'a') as seen:\n"
    "            seen.write(f'{gc.isenabled()}\\n')\n",
)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_agent_runs_with_the_garbage_collector_on(tmp_path: Path, jobs: str) -> None:
    root = green_project(tmp_path)
    module = write_module(root, COLLECTOR_LOOP)
    seen = tmp_path / "seen.txt"
    result = run_process(
        "eval", "run", "--agent", f"{module}:factory", "--jobs", jobs,
        cwd=root, env={"COLLECTOR_SEEN": str(seen)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert seen.read_text(encoding="utf-8").split() == ["True", "True"]


# The `zeroclaw` process with a watch on the collector: each collection that would walk an
# object the start-up made (while the collector was paused) is written down. The start-up's
# objects live as long as the process: no young collection should walk them only for them
# to survive it.
WATCHED_START_UP = """
import gc, os, sys
gc.disable()  # as the console script does, before the command's modules import
import harness.cli
made = harness.cli.Invocation.begins
def watch(phase, info):
    if phase == 'start' and any(
        o is made for g in range(info['generation'] + 1) for o in gc.get_objects(generation=g)
    ):
        with open(os.environ['WALKED'], 'a') as walked:
            walked.write(f"generation {info['generation']}\\n")
gc.callbacks.append(watch)
sys.argv = ['zeroclaw', 'eval', 'run', '--jobs', '1']
from harness.console import main
main()
"""


def test_no_young_collection_walks_what_the_start_up_made(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    walked = tmp_path / "walked.txt"
    result = subprocess.run(
        [sys.executable, "-c", WATCHED_START_UP],
        cwd=root,
        env=child_environment(WALKED=str(walked)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "2/2 cases passed" in result.stdout
    assert not walked.exists(), walked.read_text(encoding="utf-8")


def test_version(tmp_path: Path) -> None:
    result = run_process("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "zeroclaw-eval 0.1.0"


@pytest.mark.parametrize(
    "leftover",
    [
        "import concurrent.futures, time\n"
        "        concurrent.futures.ThreadPoolExecutor(1).submit(time.sleep, 600)\n",
        "import atexit, time\n        atexit.register(time.sleep, 600)\n",
        "import multiprocessing, time\n"
        "        multiprocessing.get_context('fork').Process(target=time.sleep, args=(600,))"
        ".start()\n",
    ],
    ids=["thread-pool", "exit-hook", "child-process"],
)
def test_what_the_agent_leaves_to_be_joined_at_exit_does_not_hold_the_process(
    tmp_path: Path, leftover: str
) -> None:
    root = green_project(tmp_path)
    loop = FAITHFUL_LOOP.replace(
        "    async def run_turn(self, user_input):\n",
        "    async def run_turn(self, user_input):\n        " + leftover,
    )
    module = write_module(root, loop)
    started = time.monotonic()
    result = run_process(
        "eval", "run", "--agent", f"{module}:factory", "--json-report", "r.json", cwd=root,
        timeout=60,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert result.returncode == 0, result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2


def _run_with_stdout(root: Path, stdout: int, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "harness", "eval", "run", *args]
    return subprocess.run(
        [*command, "--junit-xml", "j.xml", "--json-report", "r.json"],
        cwd=root,
        env=environment,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("fmt", ["table", "junit"])
def test_a_full_disk_on_stdout_still_writes_the_report_files(tmp_path: Path, fmt: str) -> None:
    root = green_project(tmp_path)
    with open("/dev/full", "w") as full:
        result = _run_with_stdout(root, full.fileno(), "--format", fmt)
    assert result.returncode == 1
    assert "No space left on device" in result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2
    assert (root / "j.xml").is_file()


def test_a_closed_pipe_in_table_format_still_writes_the_report_files(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    read, write = os.pipe()
    os.close(read)
    try:
        result = _run_with_stdout(root, write)
    finally:
        os.close(write)
    assert result.returncode == 1
    assert "could not be written" in result.stderr and "Traceback" not in result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2


def test_no_stdout_at_all_is_said_not_a_traceback(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment["PYTHONPATH"] = str(REPO)
    result = subprocess.run(
        f'"{sys.executable}" -m harness eval run --json-report r.json 1>&-',
        shell=True,
        cwd=root,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "stdout is closed" in result.stderr and "Traceback" not in result.stderr
    assert json.loads((root / "r.json").read_text())["totals"]["passed"] == 2


def test_an_interrupted_case_leaves_no_workspace_behind(tmp_path: Path) -> None:
    root = green_project(tmp_path)
    module = write_module(root, STALLING_LOOP.replace("time.sleep(600)", "await_forever()"))
    (root / f"{module}.py").write_text(
        (root / f"{module}.py")
        .read_text()
        .replace(
            "import os, pathlib, time",
            "import os, pathlib, time\n\n\ndef await_forever():\n    time.sleep(600)\n",
        )
        + "\n",
        encoding="utf-8",
    )
    temp = tmp_path / "temp"
    temp.mkdir()
    marker = tmp_path / "marker"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLE_PREFIXES)}
    environment.update(PYTHONPATH=str(REPO), ZC_MARKER=str(marker), TMPDIR=str(temp))
    # The case writes a file into its workspace first, so the workspace exists on disk.
    setup = {"setup": {"workspace_files": {"notes.txt": "left behind?"}}}
    data = json.loads((root / "evals/regression/a_echo.json").read_text())
    data.update(setup)
    (root / "evals/regression/a_echo.json").write_text(json.dumps(data), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "eval", "run", "--agent", f"{module}:factory"],
        cwd=root,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(marker, process)
    assert any(temp.iterdir())  # the running case's workspace
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=30)
    assert process.returncode == 130
    assert list(temp.iterdir()) == []
