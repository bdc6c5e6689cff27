"""The workers' fork server started early, as a fork of the harness: it imports nothing
again, is named for what it is, holds none of the harness's files, and its workers give
the reports one process gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import FAITHFUL_LOOP, REPO, fixture, text_step, turn, write_module, write_suite

from harness.run import fork_server

# A faithful loop that says, for its first case, what its worker's parent (the fork server)
# is called, which descriptors it holds and whether it had the agent's module before the
# worker asked for it.
TELLING_LOOP = (
    FAITHFUL_LOOP
    + """
import os
import sys
from pathlib import Path

_SEEN = Path(os.environ["ZC_SEEN"])


class Telling(Session):
    async def run_turn(self, user_input):
        if "tell" in user_input and not _SEEN.exists():
            parent = os.getppid()
            name = Path(f"/proc/{parent}/comm").read_text().strip()
            held = f"/proc/{parent}/fd"
            fds = sorted(os.readlink(f"{held}/{fd}") for fd in os.listdir(held))
            _SEEN.write_text(json.dumps({"name": name, "fds": fds}))
        return await super().run_turn(user_input)


def telling(ctx):
    return Telling(ctx)
"""
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or sys.version_info >= (3, 13),
    reason="the fork server is forked where its private state is known (Linux, < 3.13)",
)


def _run(tmp_path: Path, jobs: str) -> tuple[dict[str, object], str]:
    module = write_module(tmp_path, "import json\n" + TELLING_LOOP)
    says_hi = [turn("tell me hi", text_step("hi there"))]
    cases = {
        f"{n}.json": fixture(f"c{n}", says_hi, {"response_contains": ["hi"]}) for n in range(6)
    }
    suite = write_suite(tmp_path / "suite", cases)
    seen = tmp_path / f"seen-{jobs}.json"
    report = tmp_path / f"report-{jobs}.json"
    command = [sys.executable, "-m", "harness", "eval", "run", "--suite", str(suite)]
    command += ["--agent", f"{module}:telling", "--jobs", jobs, "--json-report", str(report)]
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]),
        "ZC_SEEN": str(seen),
    }
    done = subprocess.run(
        command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "in this process" not in done.stderr
    cases = json.loads(report.read_text())["cases"]
    for case in cases:
        case.pop("duration_ms")
        (case.get("record") or {}).pop("duration_ms", None)
    return json.loads(seen.read_text()), json.dumps(cases, sort_keys=True)


def test_a_run_s_fork_server_is_a_fork_of_the_harness_holding_none_of_its_files(
    tmp_path: Path,
) -> None:
    seen, pooled = _run(tmp_path, "2")
    assert seen["name"] == fork_server.SERVER_NAME.decode()
    held = [fd for fd in seen["fds"] if str(tmp_path) in fd]  # type: ignore[attr-defined]
    assert held == []  # not the report being staged, nor a fixture, nor the agent's module
    _, serial = _run(tmp_path, "1")
    assert pooled == serial


def test_with_another_thread_running_the_server_is_not_forked() -> None:
    # A fork copies no thread, and whatever lock one held would stay held for good.
    stop = threading.Event()
    beside = threading.Thread(target=stop.wait)
    beside.start()
    try:
        assert fork_server._fork_server_from_here() is False
    finally:
        stop.set()
        beside.join()


TRACKER = """
import os, sys, time
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

from harness.run import fork_server

assert fork_server._tracker_from_here()
tracker = resource_tracker._resource_tracker
comm = Path(f"/proc/{tracker._pid}/comm")
for _ in range(500):  # it names itself, and closes what it holds, as it starts
    time.sleep(0.01)
    if comm.read_text().strip() == fork_server.TRACKER_NAME.decode():
        break
print(comm.read_text().strip())
held = f"/proc/{tracker._pid}/fd"
print(sorted(int(fd) for fd in os.listdir(held)))
# A segment this process leaks is the tracker's to remove once the process is gone.
leaked = shared_memory.SharedMemory(create=True, size=16)
print(leaked.name)
sys.stdout.flush()
os.close(tracker._fd)
os.waitpid(tracker._pid, 0)
"""


def _python(source: str) -> subprocess.CompletedProcess[str]:
    """`source` run by a Python of its own with this checkout on its path, which succeeded."""
    done = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_resource_tracker_is_a_fork_holding_only_its_pipe(tmp_path: Path) -> None:
    # Spawned, it is a fresh interpreter: 30 ms of CPU every run with workers pays.
    done = _python(TRACKER)
    name, fds, segment = done.stdout.split("\n")[:3]
    assert name == fork_server.TRACKER_NAME.decode()
    assert len(json.loads(fds)) == 4  # standard streams and its pipe, as a spawned one
    # It did its job: the leaked segment was removed, and said so.
    assert not Path("/dev/shm", segment.lstrip("/")).exists()
    assert "leaked shared_memory" in done.stderr


def test_the_server_is_forked_before_the_tracker_with_interrupts_blocked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server has its warm-up ahead of it, which the workers wait for; the tracker is
    # needed only once a worker is launched. Interrupts are blocked in the server alone.
    import signal

    started: list[tuple[str, bool]] = []

    def blocked() -> bool:
        return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())

    def server() -> bool:
        started.append(("server", blocked()))
        return True

    def tracker() -> bool:
        started.append(("tracker", blocked()))
        return True

    monkeypatch.setattr(fork_server, "_fork_server_from_here", server)
    monkeypatch.setattr(fork_server, "_tracker_from_here", tracker)
    fork_server.ensure_running(forked=True)
    assert started == [("server", True), ("tracker", False)]
    assert not blocked()


NAMED_TRACKER = """
import time
from multiprocessing import resource_tracker
from pathlib import Path

from harness.run import fork_server

assert fork_server._tracker_from_here()
tracker = resource_tracker._resource_tracker
for _ in range(500):
    time.sleep(0.01)
    if Path(f"/proc/{tracker._pid}/comm").read_text().strip() == "zeroclaw-rtrack":
        break
print(Path(f"/proc/{tracker._pid}/comm").read_text().strip())
print("_ctypes" in Path(f"/proc/{tracker._pid}/maps").read_text())
"""


def test_the_tracker_names_itself_without_loading_ctypes() -> None:
    # Loading ctypes (and libffi) only to name itself was 3 ms of each run with workers.
    done = _python(NAMED_TRACKER)
    assert done.stdout.split() == [fork_server.TRACKER_NAME.decode(), "False"]
