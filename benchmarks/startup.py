"""Instant start: how long `zeroclaw` takes to answer before it runs anything.

    python benchmarks/startup.py [--quick] [--rounds 21]

Three commands, each its whole process as users run it (`measure.measure`, wall time, the
file cache warm from a first untimed round), against `python -c pass` measured in the same
rounds, so the interpreter's own start is printed beside them:

* `zeroclaw --version` (target <= 25 ms),
* `zeroclaw eval --help` (target <= 60 ms),
* `zeroclaw eval check --suite evals/regression` (target <= 150 ms).

`zeroclaw` is run as the console script pip installs runs it (`from harness.console import
main`, no `runpy`), with this tree first on the path, and with its modules' bytecode, as
pip writes it on install: each command writes it (to a cache directory of its own, the tree
left alone) in the first, untimed round, even where the environment says not to
(`PYTHONDONTWRITEBYTECODE`). Printed beside them: `python -m harness --version`, for what
`-m` adds, and `eval check` compiling every module of the harness from source at every
start, as it does where no bytecode may be written. Rounds are interleaved (every command
once per round) and each figure is the median of its rounds.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import ROOT, Target, measure, print_targets

# What pip's generated `zeroclaw` script does (its `sys.argv[0]` aside).
SCRIPT = "import sys; from harness.console import main; sys.exit(main())"
LIMITS_MS = {"--version": 25.0, "eval --help": 60.0, "eval check --suite evals/regression": 150.0}
COMPILING = "eval check, compiling every module"


def _commands() -> dict[str, list[str]]:
    script = [sys.executable, "-c", SCRIPT]
    check = [*script, "eval", "check", "--suite", str(ROOT / "evals" / "regression")]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--version": [*script, "--version"],
        "eval --help": [*script, "eval", "--help"],
        "eval check --suite evals/regression": check,
        "python -m harness --version": [sys.executable, "-m", "harness", "--version"],
        COMPILING: check,
    }


def medians(rounds: int) -> dict[str, float]:
    """The median wall time (ms) of each command over `rounds` interleaved rounds."""
    commands = _commands()
    path = {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="zeroclaw-startup-") as cache:
        # An empty PYTHONDONTWRITEBYTECODE (or PYTHONPYCACHEPREFIX) is unset, for Python.
        installed = {**path, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": cache}
        # No cache of ours (the benchmarks' own, which `measure` would add, holds the
        # harness's bytecode): the interpreter's and the packages' bytecode where they were
        # installed, the harness's source compiled at every start.
        compiling = {**path, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": ""}
        for round_ in range(rounds + 1):
            for name, argv in commands.items():
                env = compiling if name == COMPILING else installed
                done = measure(argv, cwd=ROOT, env=env)
                if done.returncode != 0:
                    sys.exit(f"`{' '.join(argv)}` exited {done.returncode}")
                if round_:  # the first round warms the file cache and writes the bytecode
                    times[name].append(done.wall * 1000)
    return {name: statistics.median(walls) for name, walls in times.items()}


def targets(quick: bool) -> list[Target]:
    found = medians(7 if quick else 21)
    base = found["python -c pass"]
    extra = f"python -c pass {base:.1f} ms; python -m harness --version "
    extra += f"{found['python -m harness --version']:.1f} ms; {COMPILING} {found[COMPILING]:.0f} ms"
    return [
        Target(f"zeroclaw {name}", found[name], limit, "ms", how=f"wall, median; {extra}")
        for name, limit in LIMITS_MS.items()
    ]


def main() -> None:
    print_targets(__doc__, targets, quick_help="7 rounds instead of 21")


if __name__ == "__main__":
    main()
