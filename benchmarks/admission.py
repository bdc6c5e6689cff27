"""Admission throughput: `load_suite` over N fixtures (the regression suite's, repeated under
fresh ids), against the target of 20,000 fixtures per second and against a baseline
measured in the same run: reading and `json.loads` of the same files, the least any
admission must do.

    python benchmarks/admission.py [-n 10000] [--rounds 5]

Rounds are interleaved, each after a collection (as `benchmarks/scale.py` times them), after
a warm-up round (imports, caches, the file cache). Prints fixtures per second by wall and
by CPU time (`time.process_time`), best round and median, and the median of per-round
ratios of admission over baseline.
"""

from __future__ import annotations

import argparse
import gc
import json
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


def rates(n: int, seconds: list[float]) -> str:
    best, middle = n / min(seconds), n / statistics.median(seconds)
    return f"{best:,.0f} fixtures/s best, {middle:,.0f}/s median"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=10_000, help="number of fixtures")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    surface = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)
    with tempfile.TemporaryDirectory(prefix="zeroclaw-admission-") as tmp:
        directory = Path(tmp)
        make(args.n, directory)
        admission(directory, surface)  # warm: imports, caches
        pairs = [(baseline(directory), admission(directory, surface)) for _ in range(args.rounds)]
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


if __name__ == "__main__":
    main()
