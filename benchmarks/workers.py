"""Workers that pay off, and what more cores would give: `zeroclaw eval run --jobs 2`
against `--jobs 1` as users run it, and the parent process's share of a run's CPU.

    python benchmarks/workers.py [--quick] [--rounds 5]

Two workloads, each run from a directory with no configuration of its own, request
snapshots taken once (`--update-snapshots`) as a user's regression suite has them, every
command measured whole (`measure.measure`: wall time, CPU of every process of it, its
workers and their fork server included):

* **openai-agents**: the regression suite's fixtures cycled to N cases under the built-in
  OpenAI Agents SDK agent (`per_case.regression_suite`): the framework cases the issue
  measured (about 4 ms each, and a second to import the framework);
* **own loop**: the own-loop example's agent (`measure.own_loop_suite`): cases that cost the
  harness alone (under half a millisecond each).

Printed, per workload:

* `--jobs 2` against `--jobs 1` at 1,000 cases (target: >= 1.6x faster, wall) and at 100
  (target: no slower, >= 1.0x): the median of per-round ratios, the two sides interleaved
  and each first in every other round; beside each, the most two cores could give that
  run: its serial part (the `--jobs 1` run of one case: interpreter, imports, the
  framework, start-up and reports) kept, the rest halved;
* at 20,000 own-loop cases with `--jobs 2`, the harness process's own CPU (admission,
  collecting the workers' reports, the reports) against the whole run's: the share a
  16-core machine cannot spread (target: below 1/16), and what Amdahl's law makes of it:
  the time of `--jobs 16` from the parent's CPU and the workers' spread over 16 cores,
  against the CPU of the `--jobs 1` run, which one core spends in all (target: >= 8x),
  both taken in each round from its `--jobs 1` and `--jobs 2` runs.

Every figure is the median of its per-round figures, the compared runs interleaved and
each first in every other round. `--quick` runs 3 rounds (the default `--rounds`: 5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import (
    OWN_LOOP,
    OWN_LOOP_AGENT,
    ROOT,
    Measured,
    Target,
    measure,
    median_ratio,
    own_loop_suite,
    zeroclaw,
)
from per_case import regression_suite

SPEEDUP_AT_1000 = 1.6
SPEEDUP_AT_100 = 1.0
PARENT_SHARE = 1 / 16
SPEEDUP_AT_16 = 8.0
_ENV = {"PYTHONPATH": f"{ROOT}{os.pathsep}{OWN_LOOP}"}


@dataclass(frozen=True)
class Workload:
    """An agent and the suite of `n` cases it passes, written into a directory."""

    name: str
    agent: str
    write: Callable[[Path, int], Path]


WORKLOADS = (
    Workload("openai-agents", "openai-agents", regression_suite),
    Workload("own loop", OWN_LOOP_AGENT, own_loop_suite),
)


def _run(suite: Path, work: Path, agent: str, *extra: str) -> Measured:
    argv = zeroclaw("eval", "run", "--suite", str(suite), "--agent", agent, *extra)
    done = measure(argv, cwd=work, env=_ENV)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(argv)}` exited {done.returncode}")
    return done


def _suite(tmp: Path, load: Workload, n: int) -> tuple[Path, Path]:
    """A suite of `n` cases with its snapshots taken, and a directory to run it from."""
    where = tmp / f"{load.agent.replace(':', '+')}-{n}"
    suite = load.write(where / "evals" / "regression", n)
    work = where / "work"
    work.mkdir()
    _run(suite, work, load.agent, "--update-snapshots", "--jobs", "1")
    return suite, work


def speedups(
    tmp: Path, load: Workload, sizes: list[int], rounds: int
) -> dict[int, tuple[float, str]]:
    """Per size: the median of per-round ratios wall(--jobs 1) / wall(--jobs 2), and in
    words the medians of both sides (wall and CPU) and the most two cores could give."""
    found = {}
    one_case, one_work = _suite(tmp, load, 1)
    for n in sizes:
        suite, work = _suite(tmp, load, n)
        pairs: list[tuple[Measured, Measured]] = []
        bounds: list[float] = []
        for round_ in range(rounds):
            sides = [("1", suite, work), ("2", suite, work), ("serial", one_case, one_work)]
            got = {}
            for jobs, where, cwd in sides if round_ % 2 == 0 else reversed(sides):
                got[jobs] = _run(where, cwd, load.agent, "--jobs", jobs.replace("serial", "1"))
            pairs.append((got["1"], got["2"]))
            serial, whole = got["serial"].wall, got["1"].wall
            bounds.append(whole / (serial + max(0.0, whole - serial) / 2))
        ratio = median_ratio([(two.wall, one.wall) for one, two in pairs])
        said = ", ".join(
            f"--jobs {jobs}: wall {statistics.median(p[side].wall for p in pairs):.3f} s, "
            f"CPU {statistics.median(p[side].cpu for p in pairs):.3f} s"
            for side, jobs in ((0, 1), (1, 2))
        )
        said += f"; the most two cores could give: {statistics.median(bounds):.2f}x"
        found[n] = (ratio, said)
    return found


def shares(tmp: Path, n: int, rounds: int) -> tuple[float, float, str]:
    """At `n` cases: the parent's share of a `--jobs 2` run's CPU and the `--jobs 16`
    speed-up Amdahl's law gives from it, each the median of its per-round figures (the two
    runs interleaved, each first in every other round), and the figures behind both."""
    own = WORKLOADS[1]
    suite, work = _suite(tmp, own, n)
    found: list[tuple[float, float, Measured, Measured]] = []
    for round_ in range(rounds):
        got = {}
        for jobs in ("1", "2") if round_ % 2 == 0 else ("2", "1"):
            got[jobs] = _run(suite, work, own.agent, "--jobs", jobs)
        one, two = got["1"], got["2"]
        parent = two.own_cpu
        # The parent's work taken as serial (the worst case), the workers' spread over 16.
        sixteen = parent + (two.cpu - parent) / 16
        # Against the CPU of `--jobs 1` (all of it on one core), not its wall time: another
        # process's load on this machine moves neither side then.
        found.append((parent / two.cpu, one.cpu / sixteen, one, two))
    share = statistics.median(each[0] for each in found)
    speedup = statistics.median(each[1] for each in found)
    one_cpu = statistics.median(each[2].cpu for each in found)
    one_wall = statistics.median(each[2].wall for each in found)
    parent = statistics.median(each[3].own_cpu for each in found)
    workers = statistics.median(each[3].cpu - each[3].own_cpu for each in found)
    said = (
        f"{n:,} cases, --jobs 2: parent {parent:.2f} s CPU "
        f"({parent / n * 1000:.3f} ms/case), workers {workers:.2f} s "
        f"({workers / n * 1000:.3f} ms/case); --jobs 1: CPU {one_cpu:.2f} s (wall "
        f"{one_wall:.2f} s); --jobs 16 by Amdahl: {parent + workers / 16:.2f} s; "
        f"medians of {rounds} rounds"
    )
    return share, speedup, said


def targets(quick: bool, rounds: int = 3) -> list[Target]:
    found: list[Target] = []
    with tempfile.TemporaryDirectory(prefix="zeroclaw-workers-") as name:
        tmp = Path(name)
        for load in WORKLOADS:
            speeds = speedups(tmp, load, [100, 1_000], rounds)
            how = f"zeroclaw eval run --agent {load.agent}, whole process, median of rounds"
            for n, limit in ((1_000, SPEEDUP_AT_1000), (100, SPEEDUP_AT_100)):
                ratio, said = speeds[n]
                title = f"--jobs 2 vs --jobs 1 at {n:,} cases, {load.name}, wall"
                found.append(Target(title, ratio, limit, "x", higher=True, how=f"{how}; {said}"))
        share, sixteen, said = shares(tmp, 20_000, rounds)
    found.append(Target("parent's share of the run's CPU", share, PARENT_SHARE, "", how=said))
    found.append(
        Target(
            "--jobs 16 vs --jobs 1 at 20,000 cases (Amdahl, from the shares)",
            sixteen,
            SPEEDUP_AT_16,
            "x",
            higher=True,
            how="the parent's CPU serial, the workers' spread over 16 cores",
        )
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    for target in targets(args.quick, 3 if args.quick else args.rounds):
        print(target.line())


if __name__ == "__main__":
    main()
