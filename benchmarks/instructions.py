"""Harness against the bare SDK loop in instructions per case, counted by valgrind: the one
figure of the harness's own cost that a shared, noisy machine cannot move.

    python benchmarks/instructions.py [-n 120]

CPU time on shared cores varies from round to round by more than the harness's whole cost
(`benchmarks/scale.py` quotes the median of interleaved rounds for that reason). Counting
instructions instead gives nearly the same number on every run: each side (`run_suite` and
the bare loop of `benchmarks/overhead.py`, on the same cases) runs under
`valgrind --tool=cachegrind --cache-sim=no` twice, over n/3 and n cases, and the difference
of the two counts, per case, is what one more case costs, with start-up, imports and the
run's fixed costs taken off. The four counts run two at a time. Needs valgrind (Debian's
`valgrind`); about 50 times slower than native, so a few minutes.

What would move the count between runs of the same code is kept still: one hash seed for
all (string hashes steer dict and set probing), and the garbage collector off on both sides.
With it on, whether a full collection falls in one run or the other depends on when the
harness's watching thread allocates, and one collection more or less moved the harness's
figure by 3%. Collection is under half a percent of either side's CPU time (the harness
leaves the heap it started with alone, `harness.runtime.collector`), which `scale.py` measures
with it on. The temporary paths still differ, by a few tenths of a percent.

Instructions are not time: memory stalls and system calls count for nothing here, so the
CPU-time ratio can be higher than this one. What this measures is the work the harness adds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import SUITE, bare, make_cases, scripted_cases

from harness import run_suite

AGENT = "openai-agents"
WARM = 21  # one of each regression fixture, run before the counted part (caches, lazy imports)


def one_side(side: str, directory: Path, warm: Path) -> None:
    """What one valgrind run executes: the warm-up, then the side over `directory`'s cases
    (the bare side makes the same cases in memory: it reads no fixture)."""
    gc.disable()  # see the module's docstring
    if side == "bare":
        cases = scripted_cases(len(list(directory.glob("*.json"))))
        asyncio.run(bare(scripted_cases(WARM)))
        if asyncio.run(bare(cases)) != len(cases):
            sys.exit("the bare loop did not finish every case")
        return
    run_suite(warm, agent=AGENT)
    report = run_suite(directory, agent=AGENT)
    if report.exit_code() != 0:
        sys.exit("the harness run did not pass")


def count(side: str, directory: Path, warm: Path) -> int:
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--side",
        side,
        str(directory),
        str(warm),
    ]
    # One hash seed for every run: string hashes steer dict and set probing, which would
    # move the count between runs of the same code.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"valgrind run of the {side} side failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=120, help="cases of the larger run (default 120)")
    parser.add_argument("--side", nargs=3, metavar=("SIDE", "DIR", "WARM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side, directory, warm = args.side
        one_side(side, Path(directory), Path(warm))
        return
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    small, large = max(args.n // 3, 1), args.n
    with tempfile.TemporaryDirectory(prefix="zeroclaw-instructions-") as tmp:
        warm = Path(tmp, "warm")
        warm.mkdir()
        make_cases(WARM, warm, SUITE)
        suites = {}
        for n in (small, large):
            suites[n] = Path(tmp, str(n))
            suites[n].mkdir()
            make_cases(n, suites[n], SUITE)
        runs = [(side, n) for side in ("bare", "harness") for n in (small, large)]
        with ThreadPoolExecutor(2) as pool:
            counted = dict(
                zip(runs, pool.map(lambda r: count(r[0], suites[r[1]], warm), runs), strict=True)
            )
    per_case = {
        side: (counted[(side, large)] - counted[(side, small)]) / (large - small)
        for side in ("bare", "harness")
    }
    print(
        f"instructions per case ({small} and {large} cases, the difference): "
        f"bare SDK loop {per_case['bare'] / 1e6:.2f} M, harness {per_case['harness'] / 1e6:.2f} M"
    )
    print(f"harness/bare: {per_case['harness'] / per_case['bare']:.3f}")


if __name__ == "__main__":
    main()
