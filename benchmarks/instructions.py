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

`--caches` also simulates the caches, the last level sized as this machine's L2 (read from
sysfs; 1 MiB, 8-way when it cannot be read), and counts its misses per case: the stalls the
instruction count leaves out. Each side's own process pays them on a path it walks again
for every case, and a run that walks more distinct code and data per case (the harness's
admission, grading, snapshots and reports beside the SDK's loop) misses more often per
instruction. On a 2-core AMD EPYC (1 MiB L2) the harness had 1.03x the bare loop's
instructions per case but 1.53x its L2 misses (27.4 K against 17.9 K), which is where the
CPU-time ratio's excess over the instruction ratio goes: a miss served by the shared L3
costs tens of cycles, one that other processes' load pushed out to memory hundreds, so the
CPU-time ratio also grows with the machine's load. About twice as slow as counting
instructions alone.
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


# The counts cachegrind prints: instructions always; the last level's misses (instruction
# and data) when the caches are simulated.
_COUNTED = {"instructions": r"I\s+refs:\s+([\d,]+)", "l2_misses": r"LL misses:\s+([\d,]+)"}


def l2_geometry() -> str:
    """This machine's L2 as cachegrind's `--LL=size,associativity,line` (sysfs's first
    level-2 cache of CPU 0); 1 MiB, 8-way, 64-byte lines when sysfs does not say."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() != "2":
                continue
            size = (index / "size").read_text().strip()
            ways = int((index / "ways_of_associativity").read_text())
            line = int((index / "coherency_line_size").read_text())
        except (OSError, ValueError):
            break
        if size.endswith("K") and size[:-1].isdigit():
            return f"{int(size[:-1]) * 1024},{ways},{line}"
    return "1048576,8,64"


def count(side: str, directory: Path, warm: Path, caches: str | None = None) -> dict[str, int]:
    """Instructions (and, given an L2 geometry as `caches`, L2 misses) of one valgrind run."""
    simulate = ["--cache-sim=yes", f"--LL={caches}"] if caches else ["--cache-sim=no"]
    command = [
        "valgrind",
        "--tool=cachegrind",
        *simulate,
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
    counted: dict[str, int] = {}
    for name, pattern in _COUNTED.items():
        found = re.search(pattern, done.stderr)
        if found is not None:
            counted[name] = int(found.group(1).replace(",", ""))
    if done.returncode != 0 or "instructions" not in counted:
        sys.exit(f"valgrind run of the {side} side failed:\n{done.stderr[-2000:]}")
    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=120, help="cases of the larger run (default 120)")
    parser.add_argument(
        "--caches", action="store_true", help="also count L2 misses (caches simulated)"
    )
    parser.add_argument("--side", nargs=3, metavar=("SIDE", "DIR", "WARM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side, directory, warm = args.side
        one_side(side, Path(directory), Path(warm))
        return
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    caches = l2_geometry() if args.caches else None
    large: int = args.n
    small = max(large // 3, 1)
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
            counted: dict[tuple[str, int], dict[str, int]] = dict(
                zip(
                    runs,
                    pool.map(lambda r: count(r[0], suites[r[1]], warm, caches), runs),
                    strict=True,
                )
            )

    def per_case(side: str, name: str) -> float:
        return (counted[(side, large)][name] - counted[(side, small)][name]) / (large - small)

    bare, harness = per_case("bare", "instructions"), per_case("harness", "instructions")
    print(
        f"instructions per case ({small} and {large} cases, the difference): "
        f"bare SDK loop {bare / 1e6:.2f} M, harness {harness / 1e6:.2f} M"
    )
    print(f"harness/bare: {harness / bare:.3f}")
    if caches:
        bare, harness = per_case("bare", "l2_misses"), per_case("harness", "l2_misses")
        size = int(caches.split(",")[0]) // 1024
        print(
            f"L2 misses per case ({size} KiB L2 simulated): "
            f"bare SDK loop {bare / 1e3:.1f} K, harness {harness / 1e3:.1f} K"
        )
        print(f"harness/bare L2 misses: {harness / bare:.3f}")


if __name__ == "__main__":
    main()
