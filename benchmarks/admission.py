"""Admission throughput: `load_suite` over N fixtures (the regression suite's, repeated under
fresh ids), against the target of 20,000 fixtures per second and against a baseline
measured in the same run: reading and `json.loads` of the same files, the least any
admission must do.

    python benchmarks/admission.py [-n 10000] [--rounds 5] [--workers 2]

Rounds are interleaved, each after a collection (as `benchmarks/scale.py` times them), after
a warm-up round (imports, caches, the file cache). Prints fixtures per second by wall and
by CPU time (`time.process_time`), best round and median, and the median of per-round
ratios of admission over baseline.

With `--workers N` (Linux), each round also admits the suite in parts in N workers started
early, as a `--jobs N` replay run does (`harness/run/worker_admission.py`), and prints this
process's CPU per fixture then against admitting it here, and the workers' CPU.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from harness.agents.protocol import AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.fixtures.suite import load_suite

SUITE = Path(__file__).resolve().parents[1] / "evals" / "regression"
TARGET = 20_000  # fixtures per second
Timing = tuple[float, float]  # (wall seconds, CPU seconds)


def make(n: int, directory: Path) -> None:
    sources = sorted(SUITE.glob("*.json"))
    for i in range(n):
        data = json.loads(sources[i % len(sources)].read_text("utf-8"))
        data["id"] = f"case-{i:06d}"
        (directory / f"c{i:06d}.json").write_text(json.dumps(data), "utf-8")


def baseline(directory: Path) -> Timing:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    for path in sorted(directory.glob("*.json")):
        json.loads(path.read_text("utf-8"))
    return time.perf_counter() - wall, time.process_time() - cpu


def admission(directory: Path, surface: AgentSurface) -> Timing:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    load_suite(directory, "replay", surface)
    return time.perf_counter() - wall, time.process_time() - cpu


def in_workers(directory: Path, surface: AgentSurface, workers: list[int]) -> Timing:
    """Wall and this process's CPU of `load_suite` admitting in parts in the workers
    started early (`workers`: their process ids); the workers' CPU is read from /proc."""
    from harness.run.worker_admission import in_workers as parts

    gc.collect()
    used = sum(_cpu(pid) for pid in workers)
    wall, cpu = time.perf_counter(), time.process_time()
    load_suite(directory, "replay", surface, functools.partial(parts, jobs=len(workers)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _WORKERS_CPU.append(sum(_cpu(pid) for pid in workers) - used)
    return wall, cpu


_WORKERS_CPU: list[float] = []


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_workers(count: int) -> list[int]:
    from harness.run import pool_workers, watchdog
    from harness.run.process_pool import start_fork_server

    start_fork_server(watchdog.run_batch.__module__, "harness.agents.protocol", count)
    for worker in pool_workers._EARLY:
        worker.forked(60)  # launched: their forks waited for here, as a pool waits
    return [worker.process.pid for worker in pool_workers._EARLY]


def rates(n: int, seconds: list[float]) -> str:
    best, middle = n / min(seconds), n / statistics.median(seconds)
    return f"{best:,.0f} fixtures/s best, {middle:,.0f}/s median"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=10_000, help="number of fixtures")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--workers", type=int, default=0, help="also admit in N workers")
    args = parser.parse_args()
    surface = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)
    workers = _start_workers(args.workers) if args.workers > 1 else []
    parallel: list[Timing] = []
    with tempfile.TemporaryDirectory(prefix="zeroclaw-admission-") as tmp:
        directory = Path(tmp)
        make(args.n, directory)
        admission(directory, surface)  # warm: imports, caches
        pairs = []
        for _ in range(args.rounds):
            pairs.append((baseline(directory), admission(directory, surface)))
            if workers:
                parallel.append(in_workers(directory, surface, workers))
    if workers:
        from harness.run.pool_workers import end_early

        end_early()
    walls = [a[0] for _, a in pairs]
    cpus = [a[1] for _, a in pairs]
    best = min(walls)
    verdict = "meets" if args.n / best >= TARGET else "misses"
    cpu = statistics.median(a[1] / b[1] for b, a in pairs)
    wall = statistics.median(a[0] / b[0] for b, a in pairs)
    print(f"fixtures: {args.n}, rounds: {args.rounds}")
    print(f"admission (load_suite), wall: {rates(args.n, walls)} (best round {best:.3f} s)")
    print(f"  CPU: {rates(args.n, cpus)}")
    print(f"  target >= {TARGET:,}/s: the best round {verdict} it")
    print(f"admission/baseline, median per round: CPU {cpu:.2f}, wall {wall:.2f}")
    if parallel:
        here = statistics.median(cpus) / args.n * 1e6
        mine = statistics.median(p[1] for p in parallel) / args.n * 1e6
        theirs = statistics.median(_WORKERS_CPU) / args.n * 1e6
        print(
            f"in {len(workers)} workers: this process {mine:.1f} us/fixture of CPU (here: "
            f"{here:.1f}), the workers {theirs:.1f} us/fixture; wall "
            f"{statistics.median(p[0] for p in parallel):.3f} s median"
        )


if __name__ == "__main__":
    main()
