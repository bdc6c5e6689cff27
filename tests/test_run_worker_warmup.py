"""`harness.run.worker_warmup`: the workers' fork server runs one case through the built-in
agents it loaded, so every worker forked from it starts with its framework warm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from conftest import echo_fixture, write_suite

# Loaded, as the fork server preloads a built-in agent's module: both are then warmed.
import harness.agents.frameworks.openai_agents
import harness.agents.frameworks.pydantic_ai
from harness.run import worker_warmup


def test_the_warm_up_case_passes_through_every_built_in_agent_it_finds(tmp_path: Path) -> None:
    assert (
        harness.agents.frameworks.openai_agents.Adapter
        and harness.agents.frameworks.pydantic_ai.Adapter
    )
    assert worker_warmup.loaded_agents() == ["openai-agents", "pydantic-ai"]
    before = set(os.listdir())
    threads = threading.active_count()
    agents = ["openai-agents", "pydantic-ai", worker_warmup.HARNESS]
    reports = worker_warmup.warm(agents)
    assert [(r.passed, r.error) for r in reports] == [(True, None)] * 3
    # Whatever failed to grade would be a warm-up that ran nothing: it grades everything.
    assert all(len(r.grades) == 4 and all(g.passed for g in r.grades) for r in reports)
    # The harness's own path, through an own loop: its one tool call was dispatched.
    assert [c.name for c in reports[2].record.calls] == ["echo"]
    assert set(agents) <= set(worker_warmup.WARMED)
    assert threading.active_count() == threads  # the server forks right after: no thread
    assert set(os.listdir()) == before  # and no file left


def test_only_the_fork_server_importing_it_runs_the_warm_up() -> None:
    probe = worker_warmup._imported_by_fork_server
    assert not (lambda: probe())()  # imported by this test's own code
    # The fork server's `main` (multiprocessing's forkserver.py) importing its preloads:
    # through the import machinery, then this module's code, which asks.
    server = "def main():\n    return machinery()\n"
    machinery = "def machinery():\n    return module()\n"
    module = "def module():\n    return probe()\n"
    names: dict[str, object] = {"probe": probe}
    exec(compile(module, "<this module>", "exec"), names)
    exec(compile(machinery, "<frozen importlib._bootstrap>", "exec"), names)
    exec(compile(server, "/lib/multiprocessing/forkserver.py", "exec"), names)
    assert names["main"]() is True  # type: ignore[operator]
    # A worker runs below that `main` too, but what it imports its own code imports.
    worker = "def main():\n    return work()\n"
    work = "def work():\n    return machinery()\n"
    exec(compile(work, "/somewhere/worker_code.py", "exec"), names)
    exec(compile(worker, "/lib/multiprocessing/forkserver.py", "exec"), names)
    assert names["main"]() is False  # type: ignore[operator]


PROBE = """
import os

from harness.run import worker_warmup
from harness.model_boundary import Divergence
from harness.run.replay import ReplayBackend


def backend(case):
    if os.getpid() == int(os.environ["PROBE_HARNESS_PID"]):
        raise Divergence("ran in the harness's own process, not a worker")
    if "openai-agents" not in worker_warmup.WARMED:
        raise Divergence("the worker's fork server never warmed openai-agents")
    return ReplayBackend(case.trace)
"""

RUN = """
import json
import os
import sys
from pathlib import Path

import probe
from harness.agents.protocol import AgentSurface
from harness.agents.registry import resolve_agent
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.pipeline import run_cases
from harness.fixtures.suite import load_suite

if __name__ == "__main__":
    os.environ["PROBE_HARNESS_PID"] = str(os.getpid())
    surface = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)
    cases = load_suite(Path(sys.argv[1]), "replay", surface)
    adapter = resolve_agent("openai-agents")
    report = run_cases(
        cases, adapter, suite="s", backend=probe.backend, jobs=2, agent_spec="openai-agents"
    )
    print(json.dumps([[c.id, c.error] for c in report.cases]))
"""


def test_workers_fork_from_a_server_that_ran_the_warm_up(tmp_path: Path) -> None:
    # A fresh process: its fork server is started by this run, with this run's preloads.
    suite = write_suite(
        tmp_path / "suite", {f"{i}.json": echo_fixture(f"case-{i}", f"m{i}") for i in range(3)}
    )
    (tmp_path / "probe.py").write_text(PROBE, "utf-8")
    (tmp_path / "run.py").write_text(RUN, "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(suite)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome == [[f"case-{i}", None] for i in range(3)], done.stderr
