"""Harness against the bare SDK loop in instructions per case, counted by valgrind: the one
figure of the harness's own cost that a shared, noisy machine cannot move.

    python benchmarks/instructions.py [-n 120] [--caches [--functions N]]

CPU time on shared cores varies from round to round by more than the harness's whole cost
(`benchmarks/per_case.py` quotes the median of interleaved rounds for that reason). Counting
instructions instead gives nearly the same number on every run. Each side runs as
`per_case.py`'s SDK figure runs it, as users run the command: `zeroclaw eval run --agent
openai-agents --jobs 1` over a suite of the regression fixtures (its request snapshots taken
once beforehand; its reporters, its last-run report, its snapshot check all in), against the
bare SDK loop of `benchmarks/overhead.py` over the same fixtures in a process of its own
(`per_case.py --bare-sdk`). Each runs under `valgrind --tool=cachegrind --cache-sim=no` twice,
over n/3 and n cases, and the difference of the two counts, per case, is what one more case
costs, with start-up, imports, the first case's warm-up and the run's fixed costs taken off.
The four counts run two at a time, after each side ran once natively (so that no count
includes compiling bytecode). Needs valgrind (Debian's `valgrind`); about 50 times slower
than native, so a few minutes.

What would move the count between runs of the same code is kept still: one hash seed for
all (string hashes steer dict and set probing). The collector runs as each side has it: the
harness pauses it while it admits the suite and leaves the heap it started the run with to
the frozen generation; the bare side does the same (`per_case.bare_sdk`), so neither walks
its import heap in the middle of one count and not the other's. The temporary paths still
differ, by a few tenths of a percent. (This module counted `run_suite` in one process once,
which left out the command's reporters and last-run report: about a twentieth of the
harness's own work per case.)

Instructions are not time: memory stalls and system calls count for nothing here, so the
CPU-time ratio can be higher than this one. What this measures is the work the harness adds.

`--caches` also simulates the caches, the last level sized as this machine's L2 (read from
sysfs; 1 MiB, 8-way when it cannot be read), and counts its misses per case: the stalls the
instruction count leaves out. A run that walks more distinct code and data per case (the
harness's grading, snapshot check, reports and recording beside the SDK's loop: ~240 of the
harness's functions a case besides the SDK's ~410) misses more often per instruction: on a
2-core AMD EPYC (1 MiB L2) the command had 1.03x the bare loop's instructions per case but
1.35-1.42x its L2 misses (26.7 K against 18.8 K at 40 and 120 cases), nearly all of them
data misses (the interpreter reading bytecode, frames and objects) while the L1 misses
only 4% more often: not more memory read, but more distinct memory a case than the L2
holds, so what the next case reads again (the SDK's own loop included) is gone by then.
That is where the CPU-time ratio's excess over the instruction ratio goes: a miss served by
the shared L3 costs tens of cycles, one that other processes' load pushed out to memory
hundreds, so the CPU-time ratio also grows with the machine's load. About twice as slow as
counting instructions alone.

`--functions N` (with `--caches`) prints the N functions (of the interpreter, its libraries
and extension modules, as valgrind sees them) with the most L2 misses per case beyond the
bare loop's. Python code shows as the interpreter's functions that run it: most of the
excess falls in `_PyEval_EvalFrameDefault` reading bytecode, frames and objects (2.9 K of
the 8.5 K a case), then in dict and type look-ups (0.6 K), msgspec's structs (0.5 K, the
harness's alone) and copying (0.2 K), spread thin over the rest: no one function of the
harness's stands out; each of its functions a case runs is read cold from beyond the L2.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import OWN_LOOP, installed
from per_case import SDK_AGENT, _env, _run, _self, _snapshot, regression_suite

# The counts cachegrind prints: instructions always; the last level's misses (instruction
# and data) when the caches are simulated.
_COUNTED = {"instructions": r"I\s+refs:\s+([\d,]+)", "l2_misses": r"LL misses:\s+([\d,]+)"}


def command(side: str, directory: Path) -> list[str]:
    """The command of one side over the suite in `directory`, as `per_case.py` runs it."""
    return _run(directory, SDK_AGENT) if side == "harness" else _self("bare-sdk", directory)


def _environment() -> dict[str, str]:
    # One hash seed for every run: string hashes steer dict and set probing, which would
    # move the count between runs of the same code.
    return {**os.environ, **installed(), **_env(), "PYTHONHASHSEED": "0"}


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


def count(
    side: str, directory: Path, caches: str | None = None, out: Path | None = None
) -> dict[str, int]:
    """Instructions (and, given an L2 geometry as `caches`, L2 misses) of one valgrind run of
    `side` over `directory`, its own process only (a child it starts, such as `git`, runs
    natively, the same at both sizes); cachegrind's per-function counts written to `out`
    when given."""
    simulate = ["--cache-sim=yes", f"--LL={caches}"] if caches else ["--cache-sim=no"]
    argv = [
        "valgrind",
        "--tool=cachegrind",
        *simulate,
        f"--cachegrind-out-file={out or os.devnull}",
        *command(side, directory),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=_environment(), cwd=OWN_LOOP)
    counted: dict[str, int] = {}
    for name, pattern in _COUNTED.items():
        found = re.search(pattern, done.stderr)
        if found is not None:
            counted[name] = int(found.group(1).replace(",", ""))
    if done.returncode != 0 or "instructions" not in counted:
        sys.exit(f"valgrind run of the {side} side failed:\n{done.stderr[-2000:]}")
    return counted


Counts = dict[tuple[str, str], list[int]]  # (file, function) -> cachegrind's events


def functions(out: Path) -> tuple[list[str], Counts]:
    """Cachegrind's counts in `out` summed per function (its source file's name and the
    function's), with the names of its events (`Ir`, `DLmr`, ...)."""
    events: list[str] = []
    counts: Counts = {}
    where = ("", "")
    with out.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("fl="):
                where = (line[3:].strip().rsplit("/", 1)[-1], where[1])
            elif line.startswith("fn="):
                where = (where[0], line[3:].strip())
            elif line[:1].isdigit():
                values = line.split()[1:]
                summed = counts.setdefault(where, [0] * len(events))
                for at, value in enumerate(values):
                    summed[at] += int(value)
    return events, counts


def _per_case(
    small: Path, large: Path, cases: int
) -> tuple[list[str], dict[tuple[str, str], list[float]]]:
    events, few = functions(small)
    _, many = functions(large)
    zero = [0] * len(events)
    return events, {
        name: [
            (m - f) / cases for m, f in zip(many.get(name, zero), few.get(name, zero), strict=True)
        ]
        for name in few.keys() | many.keys()
    }


def excess_by_function(outs: dict[tuple[str, int], Path], small: int, large: int, top: int) -> None:
    """Print the `top` functions by the L2 misses per case the harness has beyond the bare
    loop (instruction and data misses, read and written), with each side's misses and
    instructions: where the harness's extra misses fall. An interpreter's function (say
    `_PyEval_EvalFrameDefault`) stands for all the Python code it runs."""
    per_side = {}
    for side in ("bare", "harness"):
        events, per_side[side] = _per_case(outs[(side, small)], outs[(side, large)], large - small)
    misses = [events.index(e) for e in ("ILmr", "DLmr", "DLmw") if e in events]
    ir = events.index("Ir")
    zero = [0.0] * len(events)

    def l2(values: list[float]) -> float:
        return sum(values[at] for at in misses)

    names = per_side["bare"].keys() | per_side["harness"].keys()
    rows = sorted(
        names,
        key=lambda n: l2(per_side["harness"].get(n, zero)) - l2(per_side["bare"].get(n, zero)),
        reverse=True,
    )
    print(
        f"{'function':<58} {'L2 +':>7} {'harness':>8} {'bare':>7} {'instr. h':>10} {'instr. b':>10}"
    )
    for name in rows[:top]:
        h, b = per_side["harness"].get(name, zero), per_side["bare"].get(name, zero)
        shown = f"{name[0]}:{name[1]}"[-58:]
        extra, harness_l2, bare_l2 = l2(h) - l2(b), l2(h), l2(b)
        print(
            f"{shown:<58} {extra:7.0f} {harness_l2:8.0f} {bare_l2:7.0f} {h[ir]:10.0f} {b[ir]:10.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=120, help="cases of the larger run (default 120)")
    parser.add_argument(
        "--caches", action="store_true", help="also count L2 misses (caches simulated)"
    )
    parser.add_argument(
        "--functions",
        type=int,
        metavar="N",
        help="with --caches: the N functions with the most L2 misses beyond the bare loop's",
    )
    args = parser.parse_args()
    if args.functions and not args.caches:
        parser.error("--functions needs --caches")
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    caches = l2_geometry() if args.caches else None
    large: int = args.n
    small = max(large // 3, 1)
    with tempfile.TemporaryDirectory(prefix="zeroclaw-instructions-") as tmp:
        suites = {n: regression_suite(Path(tmp, str(n)), n) for n in (small, large)}
        for directory in suites.values():
            _snapshot(directory, SDK_AGENT)
        # Each side once natively first: its bytecode written, so no count compiles it.
        subprocess.run(
            command("bare", suites[small]),
            env=_environment(),
            cwd=OWN_LOOP,
            check=True,
            capture_output=True,
        )
        runs = [(side, n) for side in ("bare", "harness") for n in (small, large)]
        outs = {run: Path(tmp, f"{run[0]}-{run[1]}.out") for run in runs} if args.functions else {}
        with ThreadPoolExecutor(2) as pool:
            counted: dict[tuple[str, int], dict[str, int]] = dict(
                zip(
                    runs,
                    pool.map(lambda r: count(r[0], suites[r[1]], caches, outs.get(r)), runs),
                    strict=True,
                )
            )
        if args.functions:
            excess_by_function(outs, small, large, args.functions)

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
