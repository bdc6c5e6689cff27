"""Suites at scale, measured in one run: parallel replay, fast admission, and the harness's
own CPU time against the bare SDK loop. Flat memory is `benchmarks/memory.py`'s: the peak
RSS of the command as users run it, at 1k / 10k / 50k cases.

    python benchmarks/scale.py [--quick] [--rounds 3]

The cases are the regression suite's fixtures repeated under fresh ids (as in
`benchmarks/overhead.py`, whose bare side is reused here), replayed through the OpenAI
Agents SDK adapter. Printed, each against its target:

* replay of 1,000 cases with `--jobs 2` against `--jobs 1` (target >= 1.8 on two cores):
  the median of per-round wall ratios, rounds interleaved, after a warm-up run that starts
  the workers' fork server (as every run after the first in a process finds it); the CPU
  of both sides, the workers' included (each worker says what it used when stopped);
* admission of 10,000 fixtures (`load_suite`, what `zeroclaw eval check` runs after its
  start-up): fixtures per second, best round and median (target >= 20,000/s), per second
  of wall time and of CPU time (which another process's load moves less), and the same
  from `zeroclaw eval check` itself, its start-up (a one-fixture suite) taken off;

The harness's CPU against the bare SDK loop is `benchmarks/per_case.py`'s (the command as
users run it).

`--quick` runs one timed round of each comparison (the default runs `--rounds`).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import make_cases

from harness import run_suite
from harness.agents.protocol import AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.fixtures.suite import load_suite
from harness.run.process_pool import workers_cpu

AGENT = "openai-agents"
ROOT = Path(__file__).resolve().parents[1]
Timing = tuple[float, float]  # (wall seconds, CPU seconds: this process and its workers)


def timed_run(directory: Path, n: int, jobs: int) -> Timing:
    gc.collect()
    wall, cpu, workers = time.perf_counter(), time.process_time(), workers_cpu()
    report = run_suite(directory, agent=AGENT, jobs=jobs)
    elapsed = time.perf_counter() - wall
    used = time.process_time() - cpu + workers_cpu() - workers
    if report.exit_code() != 0 or len(report.cases) != n:
        sys.exit(f"the run with --jobs {jobs} did not pass")
    return elapsed, used


def parallel(directory: Path, n: int, rounds: int) -> list[tuple[Timing, Timing]]:
    timed_run(directory, n, 2)  # warm: the fork server, imports, caches
    return [(timed_run(directory, n, 1), timed_run(directory, n, 2)) for _ in range(rounds)]


def admission(directory: Path, rounds: int) -> list[Timing]:
    surface = AgentSurface(AGENT, BUILTIN_TOOL_NAMES)
    load_suite(directory, "replay", surface)  # warm: imports, caches, the file cache
    timings = []
    for _ in range(rounds):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        load_suite(directory, "replay", surface)
        timings.append((time.perf_counter() - start, time.process_time() - cpu))
    return timings


def check_seconds(directory: Path) -> float:
    start = time.perf_counter()
    command = [sys.executable, "-m", "harness", "eval", "check", "--suite", str(directory)]
    subprocess.run([*command, "--agent", AGENT], check=True, capture_output=True)
    return time.perf_counter() - start


def median_ratio(pairs: list[tuple[Timing, Timing]], part: int, of: Callable[..., float]) -> str:
    ratios = sorted(of(a[part], b[part]) for a, b in pairs)
    spread = f", range {ratios[0]:.2f}..{ratios[-1]:.2f}" if len(ratios) > 1 else ""
    return f"median {statistics.median(ratios):.2f}{spread}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one timed round of each")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per comparison")
    parser.add_argument("--suite", type=Path, default=ROOT / "evals" / "regression")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="zeroclaw-scale-") as tmp:
        small, large, one = Path(tmp, "1000"), Path(tmp, "10000"), Path(tmp, "1")
        for directory, n in ((small, 1000), (large, 10_000), (one, 1)):
            directory.mkdir()
            make_cases(n, directory, args.suite)

        pairs = parallel(small, 1000, rounds)
        speedup = median_ratio(pairs, 0, lambda serial, pooled: serial / pooled)
        cpu = median_ratio(pairs, 1, lambda serial, pooled: pooled / serial)
        print(f"replay of 1,000 cases, --jobs 2 against --jobs 1 ({rounds} round(s)):")
        print(f"  speed-up (wall): {speedup}  (target >= 1.80 on 2 cores)")
        print(f"  CPU, --jobs 2 over --jobs 1 (workers included): {cpu}")
        for (serial, pooled), k in zip(pairs, range(1, rounds + 1), strict=True):
            print(
                f"  round {k}: --jobs 1 {serial[0]:.2f} s wall / {serial[1]:.2f} s CPU, "
                f"--jobs 2 {pooled[0]:.2f} s wall / {pooled[1]:.2f} s CPU"
            )

        timings = admission(large, max(rounds, 3))
        walls, cpus = [t[0] for t in timings], [t[1] for t in timings]
        print(
            f"admission of 10,000 fixtures (load_suite): {10_000 / min(walls):,.0f} fixtures/s "
            f"best, {10_000 / statistics.median(walls):,.0f}/s median  (target >= 20,000/s); "
            f"per CPU second: {10_000 / min(cpus):,.0f} best, "
            f"{10_000 / statistics.median(cpus):,.0f} median"
        )
        start_up = min(check_seconds(one) for _ in range(3))
        whole = min(check_seconds(large) for _ in range(rounds))
        print(
            f"  zeroclaw eval check: {whole:.2f} s for 10,000, {start_up:.2f} s for one: "
            f"{9_999 / (whole - start_up):,.0f} fixtures/s after start-up"
        )


if __name__ == "__main__":
    main()
