"""Measuring the command as users run it: wall time, CPU time of the process and of every
process it started (workers, the fork server, and any orphan left behind), and peak RSS.

    from measure import measure, own_loop_suite

This process makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`), so a worker
whose parent ended before it is handed to us, not to init, and its CPU time is counted when
it is reaped. `os.wait4` gives each reaped process's own resource usage (its waited-for
descendants included), so every figure is the command's alone, whatever ran before it. Commands
run as installed (`installed`): with their modules' bytecode, as a pip install has it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OWN_LOOP = ROOT / "examples" / "own_loop"
OWN_LOOP_AGENT = "loop:factory"
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where the kernel
    offers no such thing (the CPU of orphans is then lost, and said so by the caller)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class Measured:
    """One run of a command: `wall` and `cpu` (user + system, every descendant) in seconds,
    `peak_rss_mb` the largest resident set of any one process of it, `returncode`, the
    command's standard output, and `own_cpu`, the part of `cpu` that was the command's
    process itself and the children it waited for (the rest: processes that outlived it,
    the workers' fork server and its workers among them)."""

    wall: float
    cpu: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    own_cpu: float = 0.0


def installed() -> dict[str, str]:
    """The environment of a command run as installed: its modules' bytecode written once
    (to a cache of this process's own) and read after, as a pip install has it, whatever
    `PYTHONDONTWRITEBYTECODE` says here (set, every start compiles each module from
    source: a tenth of a second more for every command, none of it a user's)."""
    if not _CACHE:
        _CACHE.append(tempfile.mkdtemp(prefix="zeroclaw-bench-pycache-"))
        atexit.register(shutil.rmtree, _CACHE[0], True)
    # An empty PYTHONDONTWRITEBYTECODE is unset, for Python.
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": _CACHE[0]}


_CACHE: list[str] = []


def measure(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    orphan_grace: float = 5.0,
) -> Measured:
    """Run `argv` to its end and measure it, orphans included (waited for up to
    `orphan_grace` seconds after the command ended, then killed and still counted); with
    its bytecode (`installed`) unless `env` says otherwise."""
    become_subreaper()
    merged = {**os.environ, **installed(), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=merged, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    own = cpu = usage.ru_utime + usage.ru_stime
    peak = usage.ru_maxrss
    for orphan in _reap(orphan_grace):
        cpu += orphan.ru_utime + orphan.ru_stime
        peak = max(peak, orphan.ru_maxrss)
    text = out.decode("utf-8", "replace")
    return Measured(wall, cpu, peak / 1024, proc.returncode, text, own)


def _reap(grace: float) -> list[resource.struct_rusage]:
    """Every orphan handed to us, waited for until `grace` runs out, then killed."""
    usages: list[resource.struct_rusage] = []
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return usages
        if pid:
            usages.append(usage)
            continue
        if time.monotonic() > deadline:
            _kill_children()
            deadline = float("inf")
        time.sleep(0.01)


def _kill_children() -> None:
    # An orphan's pid is found from /proc: it is ours (the subreaper's) child now.
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), 9)


def own_loop_suite(directory: Path, n: int) -> Path:
    """`n` replay cases of the own-loop example (its fixtures repeated under fresh ids) in
    `directory`, a regression suite the example's agent passes: run it with
    `--agent loop:factory` from `OWN_LOOP` (or with it on `PYTHONPATH`)."""
    directory.mkdir(parents=True, exist_ok=True)
    sources = sorted((OWN_LOOP / "evals").glob("*.json"))
    fixtures = [json.loads(p.read_text("utf-8")) for p in sources]
    for k in range(n):
        fixture = dict(fixtures[k % len(fixtures)])
        fixture["id"] = f"case-{k:06d}"
        (directory / f"case_{k:06d}.json").write_text(json.dumps(fixture), "utf-8")
    return directory


def zeroclaw(*args: str) -> list[str]:
    """The command line of `zeroclaw ARGS` as this interpreter runs it."""
    return [sys.executable, "-m", "harness", *args]


@dataclass(frozen=True)
class Target:
    """One of the figures issue targets name: `figure` against `limit`, met when at or below
    it (`higher=False`) or at or above it (`higher=True`)."""

    name: str
    figure: float
    limit: float
    unit: str
    higher: bool = False
    how: str = ""

    @property
    def met(self) -> bool:
        return self.figure >= self.limit if self.higher else self.figure <= self.limit

    def line(self) -> str:
        sign = ">=" if self.higher else "<="
        verdict = "met" if self.met else "MISSED"
        how = f"  ({self.how})" if self.how else ""
        return (
            f"{self.name}: {self.figure:.3g} {self.unit} "
            f"(target {sign} {self.limit:g} {self.unit}): {verdict}{how}"
        )


def median_ratio(pairs: Sequence[tuple[float, float]]) -> float:
    """The median of the per-round ratios b / a of interleaved rounds (a, b)."""
    return statistics.median(b / a for a, b in pairs if a > 0)


def print_targets(
    doc: str | None, targets: Callable[[bool], list[Target]], quick_help: str
) -> None:
    """A benchmark's `main`: `--quick` parsed, each of its targets printed on a line."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    for target in targets(parser.parse_args().quick):
        print(target.line(), flush=True)
