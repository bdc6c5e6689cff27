"""Admission throughput: `load_suite` over N fixtures (the regression suite's, repeated under
fresh ids), against a baseline measured in the same run: reading and `json.loads` of the same
files, the least any admission must do.

    python benchmarks/admission.py [-n 2000] [--rounds 5]

Rounds are interleaved; prints fixtures per second and the median of per-round ratios of
CPU time (`time.process_time`) and wall time, admission over baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from harness.agent import AgentSurface
from harness.builtin_toolset import BUILTIN_TOOL_NAMES
from harness.suite import load_suite

SUITE = Path(__file__).resolve().parents[1] / "evals" / "regression"


def make(n: int, directory: Path) -> None:
    sources = sorted(SUITE.glob("*.json"))
    for i in range(n):
        data = json.loads(sources[i % len(sources)].read_text("utf-8"))
        data["id"] = f"case-{i:06d}"
        (directory / f"c{i:06d}.json").write_text(json.dumps(data), "utf-8")


def baseline(directory: Path) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for path in sorted(directory.glob("*.json")):
        json.loads(path.read_text("utf-8"))
    return time.perf_counter() - wall, time.process_time() - cpu


def admission(directory: Path, surface: AgentSurface) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    load_suite(directory, "replay", surface)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="number of fixtures")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    surface = AgentSurface("openai-agents", BUILTIN_TOOL_NAMES)
    with tempfile.TemporaryDirectory(prefix="zeroclaw-admission-") as tmp:
        directory = Path(tmp)
        make(args.n, directory)
        admission(directory, surface)  # warm: imports, caches
        pairs = [(baseline(directory), admission(directory, surface)) for _ in range(args.rounds)]
    best = min(a[0] for _, a in pairs)
    cpu = statistics.median(a[1] / b[1] for b, a in pairs)
    wall = statistics.median(a[0] / b[0] for b, a in pairs)
    print(f"fixtures: {args.n}, rounds: {args.rounds}")
    print(f"admission: {args.n / best:,.0f} fixtures/s (best round, {best:.3f} s)")
    print(f"admission/baseline, median per round: CPU {cpu:.2f}, wall {wall:.2f}")


if __name__ == "__main__":
    main()
