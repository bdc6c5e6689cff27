"""What a run with `--history-dir` costs against the size of its history, measured as users
run it: `zeroclaw eval run --history-dir DIR --summary s.md --html r.html` on GitHub Actions
(the step summary too), each run a fresh process.

    python benchmarks/history.py [--small 100] [--large 3000] [--cases 20] [--rounds 3]

The suite is `--cases` of the regression suite's fixtures (repeated under fresh ids); its
history is `--small` or `--large` earlier runs of it by the same agent, a minute apart,
each a copy of a real run's entry. The baseline is the same command without
`--history-dir`, measured in the same run. Rounds are interleaved, the order of the three
commands turning from round to round, after a warm-up run of each. Each process is
measured alone (`os.wait4`): CPU time (user and system, of the process and every child it
waited for) and peak RSS. Prints, per command, the median CPU seconds and peak RSS, and the
medians of the per-round CPU ratios against the baseline and of large against small
(target about 1: the run's cost does not grow with its history). Each run adds its own
entry, a few to histories of hundreds: the ratio does not notice.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec

from harness.tracking import history as history_store

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "evals" / "regression"
Usage = tuple[float, float]  # (CPU seconds, peak RSS in MB)


def make_project(directory: Path, cases: int) -> None:
    """A project whose suite `evals/regression` holds `cases` fixtures."""
    suite = directory / "evals" / "regression"
    suite.mkdir(parents=True)
    sources = sorted(SUITE.glob("*.json"))
    for i in range(cases):
        data = json.loads(sources[i % len(sources)].read_text("utf-8"))
        data["id"] = f"case-{i:05d}"
        (suite / f"c{i:05d}.json").write_text(json.dumps(data), "utf-8")


def command(history: Path | None) -> list[str]:
    run = [sys.executable, "-m", "harness", "eval", "run", "--suite", "evals/regression"]
    reports = ["--summary", "s.md", "--html", "r.html"]
    return [*run, *reports, *([] if history is None else ["--history-dir", str(history)])]


def measure(project: Path, history: Path | None) -> Usage:
    """One run in a fresh process: its CPU time (children included) and peak RSS."""
    step = project / "step.md"
    step.write_text("", "utf-8")  # the step summary of this run only
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)}
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command(history), cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            errors.seek(0)
            sys.exit(f"the run failed ({process.returncode}):\n{errors.read().decode()[-3000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # KB on Linux


def grow(seed: Path, history: Path, entries: int) -> None:
    """`entries` earlier runs in `history`: copies of the entry in `seed`, a minute apart."""
    [written] = seed.glob("*/*.json")
    entry = msgspec.json.decode(written.read_bytes(), type=history_store.HistoryEntry)
    folder = history_store.suite_directory(history, entry.suite)
    folder.mkdir(parents=True)
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for i in range(entries):
        moment = (start + timedelta(minutes=i)).isoformat(timespec="seconds")
        earlier = msgspec.structs.replace(entry, recorded_at=moment)
        (folder / history_store.entry_name(earlier)).write_bytes(history_store.encode(earlier))


def summary(name: str, usages: list[Usage]) -> str:
    cpu = statistics.median(u[0] for u in usages)
    rss = statistics.median(u[1] for u in usages)
    return f"{name:<22} CPU {cpu:6.2f} s   peak RSS {rss:7.1f} MB"


def ratio(rounds: list[dict[str, Usage]], top: str, bottom: str) -> str:
    ratios = sorted(r[top][0] / r[bottom][0] for r in rounds)
    spread = f", range {ratios[0]:.2f}..{ratios[-1]:.2f}" if len(ratios) > 1 else ""
    rss = statistics.median(r[top][1] / r[bottom][1] for r in rounds)
    return f"{top} / {bottom}: CPU median {statistics.median(ratios):.2f}{spread}; RSS {rss:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100, help="entries of the small history")
    parser.add_argument("--large", type=int, default=3000, help="entries of the large history")
    parser.add_argument("--cases", type=int, default=20, help="cases of the suite")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zeroclaw-history-") as tmp:
        project = Path(tmp)
        make_project(project, args.cases)
        measure(project, project / "seed")  # one real entry, the model of the others
        histories: dict[str, Path | None] = {"no history (baseline)": None}
        for name, entries in (("small", args.small), ("large", args.large)):
            histories[f"{name}: {entries} entries"] = project / name
            grow(project / "seed", project / name, entries)
        shutil.rmtree(project / "seed")
        for history in histories.values():
            measure(project, history)  # warm: the file cache, compiled bytecode
        names = list(histories)
        rounds: list[dict[str, Usage]] = []
        for k in range(args.rounds):
            order = names[k % len(names) :] + names[: k % len(names)]
            rounds.append({name: measure(project, histories[name]) for name in order})
    print(f"a suite of {args.cases} cases; rounds: {args.rounds} (medians)")
    for name in names:
        print(summary(name, [r[name] for r in rounds]))
    baseline, small, large = names
    print(ratio(rounds, small, baseline))
    print(ratio(rounds, large, baseline))
    print(ratio(rounds, large, small) + "   (target about 1: no growth with the history)")


if __name__ == "__main__":
    main()
