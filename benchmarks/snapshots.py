"""The request snapshot check's cost in replay: the same suite replayed with the check on
and off, in one process.

    python benchmarks/snapshots.py [-n 400] [--rounds 5]

N cases (the regression suite's fixtures, repeated under fresh ids, as
`benchmarks/overhead.py` makes them) get their snapshots taken once (`--update-snapshots`);
then each round replays the suite through the OpenAI Agents SDK twice, with every snapshot
checked (rendered, read, compared: all match) and with the check off, in alternating order
so each pair ran under the same conditions. Prints the median of the per-round CPU-time
ratios and their spread, and the ratio of the best of each side (target: within the noise,
<= 1.05: the check must not make replay measurably slower).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import make_cases

from harness.config import SnapshotSetting
from harness.pipeline import RunOptions, run

AGENT = "openai-agents"


def replay(directory: Path, n: int, snapshots: SnapshotSetting, update: bool = False) -> float:
    """CPU seconds of one replay of the suite; exits if any case failed."""
    options = RunOptions(
        directory,
        AGENT,
        root=directory,
        snapshots=snapshots,
        update_snapshots=update,
    )
    cpu = time.process_time()
    report = run(options)
    spent = time.process_time() - cpu
    if report.exit_code() != 0 or len(report.cases) != n:
        bad = [c for c in report.cases if not c.passed][:3]
        sys.exit(f"the replay did not pass: {bad}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=400, help="number of cases (default 400)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "regression"
        directory.mkdir()
        make_cases(args.n, directory)
        replay(directory, args.n, "fail", update=True)  # takes them, and warms every cache
        taken = len(list((directory / "__snapshots__" / AGENT).glob("*.snap")))
        assert taken == args.n, taken
        ratios, on_times, off_times = [], [], []
        for index in range(args.rounds):
            order: tuple[SnapshotSetting, SnapshotSetting] = (
                ("fail", "off") if index % 2 == 0 else ("off", "fail")
            )
            spent = {mode: replay(directory, args.n, mode) for mode in order}
            on_times.append(spent["fail"])
            off_times.append(spent["off"])
            ratios.append(spent["fail"] / spent["off"])
    print(f"cases: {args.n}, rounds: {args.rounds}, agent: {AGENT}")
    print(f"check on : best {min(on_times):.3f}s CPU")
    print(f"check off: best {min(off_times):.3f}s CPU")
    spread = f"{min(ratios):.3f}..{max(ratios):.3f}"
    print(f"ratio (on/off), median of rounds: {statistics.median(ratios):.3f} (spread {spread})")
    print(f"ratio (on/off), best of each: {min(on_times) / min(off_times):.3f}")


if __name__ == "__main__":
    main()
