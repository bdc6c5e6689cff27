"""Workers that pay off, and what more cores would give: `zeroclaw eval run --jobs 2`
against `--jobs 1` as users run it, and the parent process's share of a run's CPU.

    python benchmarks/workers.py [--quick] [--rounds 5]

Own-loop suites (`measure.own_loop_suite`: the example's agent, so the cases cost the
harness alone) of 100, 1,000 and 20,000 cases, their request snapshots taken once
(`--update-snapshots`) as a user's regression suite has them, run from a directory with no
configuration of its own. Each command is measured whole (`measure.measure`: wall time,
CPU of every process of it, its workers and their fork server included).

* `--jobs 2` against `--jobs 1` at 1,000 cases (target: >= 1.6x faster, wall) and at 100
  (target: no slower, >= 1.0x): the median of per-round ratios, the two sides interleaved
  and each first in every other round;
* at 20,000 cases with `--jobs 2`, the harness process's own CPU (admission, collecting
  the workers' reports, the reports) against the whole run's: the share a 16-core machine
  cannot spread (target: below 1/16), and what Amdahl's law makes of it: the time of
  `--jobs 16` from the parent's CPU and the workers' spread over 16 cores, against the
  CPU of the `--jobs 1` run, which one core spends in all (the issue's target: >= 8x).

`--quick` runs 3 rounds (the default `--rounds`) and measures the 20,000-case run once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
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

SPEEDUP_AT_1000 = 1.6
SPEEDUP_AT_100 = 1.0
PARENT_SHARE = 1 / 16
SPEEDUP_AT_16 = 8.0
_ENV = {"PYTHONPATH": f"{ROOT}{os.pathsep}{OWN_LOOP}"}


def _run(suite: Path, work: Path, *extra: str) -> Measured:
    argv = zeroclaw("eval", "run", "--suite", str(suite), "--agent", OWN_LOOP_AGENT, *extra)
    done = measure(argv, cwd=work, env=_ENV)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(argv)}` exited {done.returncode}")
    return done


def _suite(tmp: Path, n: int) -> tuple[Path, Path]:
    """A suite of `n` cases with its snapshots taken, and a directory to run it from."""
    suite = own_loop_suite(tmp / f"suite-{n}" / "evals" / "regression", n)
    work = tmp / f"work-{n}"
    work.mkdir()
    _run(suite, work, "--update-snapshots", "--jobs", "1")
    return suite, work


def speedups(tmp: Path, sizes: list[int], rounds: int) -> dict[int, tuple[float, str]]:
    """Per size: the median of per-round ratios wall(--jobs 1) / wall(--jobs 2), and the
    medians of both sides (wall and CPU) said in words."""
    found = {}
    for n in sizes:
        suite, work = _suite(tmp, n)
        pairs: list[tuple[Measured, Measured]] = []
        for round_ in range(rounds):
            if round_ % 2:
                two = _run(suite, work, "--jobs", "2")
                one = _run(suite, work, "--jobs", "1")
            else:
                one = _run(suite, work, "--jobs", "1")
                two = _run(suite, work, "--jobs", "2")
            pairs.append((one, two))
        ratio = median_ratio([(two.wall, one.wall) for one, two in pairs])
        said = ", ".join(
            f"--jobs {jobs}: wall {statistics.median(p[side].wall for p in pairs):.3f} s, "
            f"CPU {statistics.median(p[side].cpu for p in pairs):.3f} s"
            for side, jobs in ((0, 1), (1, 2))
        )
        found[n] = (ratio, said)
    return found


def shares(tmp: Path, n: int) -> tuple[float, float, str]:
    """At `n` cases: the parent's share of a `--jobs 2` run's CPU, the `--jobs 16` speed-up
    Amdahl's law gives from it, and the figures behind both in words."""
    suite, work = _suite(tmp, n)
    one = _run(suite, work, "--jobs", "1")
    two = _run(suite, work, "--jobs", "2")
    parent, workers = two.own_cpu, two.cpu - two.own_cpu
    share = parent / two.cpu
    sixteen = parent + workers / 16  # the parent's work is taken as serial: the worst case
    said = (
        f"{n:,} cases, --jobs 2: parent {parent:.2f} s CPU "
        f"({parent / n * 1000:.3f} ms/case), workers {workers:.2f} s "
        f"({workers / n * 1000:.3f} ms/case); --jobs 1: CPU {one.cpu:.2f} s (wall "
        f"{one.wall:.2f} s); --jobs 16 by Amdahl: {sixteen:.2f} s"
    )
    # Against the CPU of `--jobs 1` (all of it on one core), not its wall time: another
    # process's load on this machine moves neither side then.
    return share, one.cpu / sixteen, said


def targets(quick: bool, rounds: int = 3) -> list[Target]:
    with tempfile.TemporaryDirectory(prefix="zeroclaw-workers-") as name:
        tmp = Path(name)
        found = speedups(tmp, [100, 1_000], rounds)
        share, sixteen, said = shares(tmp, 20_000)
    how = "zeroclaw eval run, own loop, whole process, median of per-round ratios"
    return [
        Target(
            "--jobs 2 vs --jobs 1 at 1,000 cases, wall",
            found[1_000][0],
            SPEEDUP_AT_1000,
            "x",
            higher=True,
            how=f"{how}; {found[1_000][1]}",
        ),
        Target(
            "--jobs 2 vs --jobs 1 at 100 cases, wall",
            found[100][0],
            SPEEDUP_AT_100,
            "x",
            higher=True,
            how=f"{how}; {found[100][1]}",
        ),
        Target("parent's share of the run's CPU", share, PARENT_SHARE, "", how=said),
        Target(
            "--jobs 16 vs --jobs 1 at 20,000 cases (Amdahl, from the shares)",
            sixteen,
            SPEEDUP_AT_16,
            "x",
            higher=True,
            how="the parent's CPU serial, the workers' spread over 16 cores",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    for target in targets(args.quick, 3 if args.quick else args.rounds):
        print(target.line())


if __name__ == "__main__":
    main()
