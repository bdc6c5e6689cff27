"""The request snapshot check's cost as users pay it: `zeroclaw eval run` over the same
suite with every snapshot checked against `--snapshots off`, each a process of its own.

    python benchmarks/snapshots.py [-n 400] [--rounds 5] [--agent own-loop|openai-agents]

N cases (the own-loop example's fixtures repeated under fresh ids, `measure.own_loop_suite`;
or the regression suite's through the OpenAI Agents SDK, as `benchmarks/overhead.py` makes
them) get their snapshots taken once (`--update-snapshots`, which also warms the disk
cache); then each round runs the command twice, with the check on (`--snapshots fail`:
every snapshot rendered, read and compared, all matching) and off, in alternating order so
each pair ran under the same conditions. Each run is measured by `measure.measure`: wall
time and the CPU time of the command and of every process it started (from 200 cases the
run spreads over worker processes, whose CPU counts too). Prints each side's best round and
the median of the per-round CPU ratios with their spread (target: <= 1.05, the check must
not make replay measurably slower).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import OWN_LOOP, OWN_LOOP_AGENT, ROOT, Measured, Target, measure, own_loop_suite
from measure import zeroclaw as zeroclaw_command
from overhead import make_cases

AGENTS = {"own-loop": OWN_LOOP_AGENT, "openai-agents": "openai-agents"}
TARGET = 1.05


def suite_of(agent: str, directory: Path, n: int) -> None:
    if agent == "own-loop":
        own_loop_suite(directory, n)
    else:
        directory.mkdir(parents=True)
        make_cases(n, directory)


def run(directory: Path, agent: str, n: int, *flags: str) -> Measured:
    """One `zeroclaw eval run` of the suite, measured; exits unless every case passed."""
    argv = zeroclaw_command("eval", "run", "--suite", str(directory), "--agent", AGENTS[agent])
    # From the suite's parent, so the last run kept for `show` stays in the temporary folder;
    # the own loop's module and the harness on the path, as a user's project has them.
    path = os.pathsep.join(p for p in (str(OWN_LOOP), str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {"PYTHONPATH": path, "CI": "", "GITHUB_ACTIONS": ""}
    done = measure([*argv, *flags], cwd=directory.parent, env=env)
    if done.returncode != 0 or f"{n}/{n} cases passed" not in done.stdout:
        sys.exit(f"the run did not pass (exit {done.returncode}):\n{done.stdout[-2000:]}")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=400, help="number of cases (default 400)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--agent", choices=sorted(AGENTS), default="own-loop")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zeroclaw-snapshots-") as tmp:
        directory = Path(tmp) / "regression"
        suite_of(args.agent, directory, args.n)
        run(directory, args.agent, args.n, "--update-snapshots")
        taken = list((directory / "__snapshots__").rglob("*.snap"))
        assert len(taken) == args.n, len(taken)
        pairs: list[tuple[Measured, Measured]] = []  # (off, on)
        for index in range(args.rounds):
            order = ("fail", "off") if index % 2 == 0 else ("off", "fail")
            done = {mode: run(directory, args.agent, args.n, "--snapshots", mode) for mode in order}
            pairs.append((done["off"], done["fail"]))
    ratios = [on.cpu / off.cpu for off, on in pairs]
    walls = [on.wall / off.wall for off, on in pairs]
    print(f"cases: {args.n}, rounds: {args.rounds}, agent: {AGENTS[args.agent]}")
    for name, side in (("check on ", 1), ("check off", 0)):
        best = min(pair[side].cpu for pair in pairs)
        wall = min(pair[side].wall for pair in pairs)
        print(f"{name}: best {best:.3f} s CPU (all processes), best {wall:.3f} s wall")
    spread = f"{min(ratios):.3f}..{max(ratios):.3f}"
    print(f"wall ratio (on/off), median of rounds: {statistics.median(walls):.3f}")
    target = Target(
        "CPU ratio (on/off), median of per-round ratios",
        statistics.median(ratios),
        TARGET,
        "x",
        how=f"spread {spread}",
    )
    print(target.line())


if __name__ == "__main__":
    main()
