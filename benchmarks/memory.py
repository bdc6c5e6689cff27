"""Flat memory: peak RSS of `zeroclaw eval run` as users run it, at 1k / 10k / 50k cases.

    python benchmarks/memory.py [--quick]

An own-loop suite of each size (`measure.own_loop_suite`, the example's agent, so the
framework costs nothing and what grows is the harness's) has its request snapshots taken
once (`--update-snapshots`), as a user's regression suite has them, then is run twice, each
in a fresh process measured by `measure.measure` (the largest resident set of any process of
the command): with no report flags (the run still keeps its last-run report for `show`), and
with `--json-report --junit-xml --html`. Printed, each against its target: the growth of peak
RSS from the smallest suite to the largest (target <= 20 MB, issue 29, item 1).

`--quick` measures 1k and 10k only.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import (
    OWN_LOOP,
    OWN_LOOP_AGENT,
    ROOT,
    Target,
    measure,
    own_loop_suite,
    print_targets,
    zeroclaw,
)

GROWTH_LIMIT_MB = 20.0


def _run(suite: Path, work: Path, *extra: str) -> float:
    """Peak RSS (MB) of one run of `suite`, from `work` (where `.zeroclaw-eval` is kept)."""
    argv = zeroclaw(
        "eval", "run", "--suite", str(suite), "--agent", OWN_LOOP_AGENT, "--jobs", "1", *extra
    )
    done = measure(argv, cwd=work, env={"PYTHONPATH": f"{ROOT}{os.pathsep}{OWN_LOOP}"})
    if done.returncode != 0:
        sys.exit(f"`{' '.join(argv)}` exited {done.returncode}")
    return done.peak_rss_mb


def peaks(sizes: list[int]) -> dict[str, dict[int, float]]:
    """Peak RSS per size, with no report flags ("plain") and with every report ("reports")."""
    found: dict[str, dict[int, float]] = {"plain": {}, "reports": {}}
    with tempfile.TemporaryDirectory(prefix="zeroclaw-memory-") as tmp:
        for n in sizes:
            suite = own_loop_suite(Path(tmp, f"suite-{n}"), n)
            work = Path(tmp, f"work-{n}")
            work.mkdir()
            _run(suite, work, "--update-snapshots")
            found["plain"][n] = _run(suite, work)
            reports = Path(tmp, f"reports-{n}")
            found["reports"][n] = _run(
                suite,
                work,
                "--json-report",
                str(reports / "report.json"),
                "--junit-xml",
                str(reports / "junit.xml"),
                "--html",
                str(reports / "report.html"),
            )
    return found


def targets(quick: bool) -> list[Target]:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 50_000]
    found = peaks(sizes)
    low, high = sizes[0], sizes[-1]
    result = []
    for side, flags in (
        ("plain", "no report flags"),
        ("reports", "--json-report --junit-xml --html"),
    ):
        figures = ", ".join(f"{n:,}: {mb:.0f} MB" for n, mb in found[side].items())
        result.append(
            Target(
                f"peak RSS growth {low:,} -> {high:,} cases, {flags}",
                found[side][high] - found[side][low],
                GROWTH_LIMIT_MB,
                "MB",
                how=f"zeroclaw eval run, own loop, --jobs 1; {figures}",
            )
        )
    return result


def main() -> None:
    print_targets(__doc__, targets, quick_help="1k and 10k cases only")


if __name__ == "__main__":
    main()
