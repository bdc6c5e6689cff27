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

Printed too, as figures (no target of the issue names them): what a run of one case costs,
the part of every `eval run` that no number of cases or workers spreads out (it bounds
what `--jobs 2` can gain over `--jobs 1`, and every CI run pays it):

* `zeroclaw eval run` of one own-loop case (`examples/own_loop`, `--jobs 1`), wall and CPU;
* `zeroclaw eval run` of one regression fixture with `--agent openai-agents` (`--jobs 1`),
  beside `python -c "import agents"`, what importing the framework alone costs.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import OWN_LOOP, OWN_LOOP_AGENT, ROOT, Target, measure, own_loop_suite, print_targets

# What pip's generated `zeroclaw` script does (its `sys.argv[0]` aside).
SCRIPT = "import sys; from harness.console import main; sys.exit(main())"
LIMITS_MS = {"--version": 25.0, "eval --help": 60.0, "eval check --suite evals/regression": 150.0}
COMPILING = "eval check, compiling every module"
ONE_CASE = "eval run, one own-loop case"
ONE_SDK_CASE = "eval run, one openai-agents case"
IMPORT_AGENTS = 'python -c "import agents"'
# The fixture the one openai-agents case runs: the regression suite's first.
SDK_FIXTURE = ROOT / "evals" / "regression" / "chained_echo_three_in_order.json"


def _commands(one_case: Path) -> dict[str, tuple[list[str], Path]]:
    """Each command and the directory it runs in; `one_case`: a one-case own-loop suite."""
    script = [sys.executable, "-c", SCRIPT]
    check = [*script, "eval", "check", "--suite", str(ROOT / "evals" / "regression")]
    run = [*script, "eval", "run", "--jobs", "1", "--suite"]
    return {
        "python -c pass": ([sys.executable, "-c", "pass"], ROOT),
        "--version": ([*script, "--version"], ROOT),
        "eval --help": ([*script, "eval", "--help"], ROOT),
        "eval check --suite evals/regression": (check, ROOT),
        "python -m harness --version": ([sys.executable, "-m", "harness", "--version"], ROOT),
        COMPILING: (check, ROOT),
        ONE_CASE: ([*run, str(one_case), "--agent", OWN_LOOP_AGENT], OWN_LOOP),
        ONE_SDK_CASE: ([*run, str(SDK_FIXTURE), "--agent", "openai-agents"], ROOT),
        IMPORT_AGENTS: ([sys.executable, "-c", "import agents"], ROOT),
    }


def medians(rounds: int) -> dict[str, tuple[float, float]]:
    """The median wall and CPU time (ms) of each command over `rounds` interleaved rounds."""
    path = {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="zeroclaw-startup-") as cache:
        commands = _commands(own_loop_suite(Path(cache) / "one-case", 1))
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        # An empty PYTHONDONTWRITEBYTECODE (or PYTHONPYCACHEPREFIX) is unset, for Python.
        installed = {**path, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": cache}
        # No cache of ours (the benchmarks' own, which `measure` would add, holds the
        # harness's bytecode): the interpreter's and the packages' bytecode where they were
        # installed, the harness's source compiled at every start.
        compiling = {**path, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": ""}
        # The one case's request snapshot, written once: the timed runs check it.
        argv, cwd = commands[ONE_CASE]
        measure([*argv, "--update-snapshots"], cwd=cwd, env=installed)
        for round_ in range(rounds + 1):
            for name, (argv, cwd) in commands.items():
                env = compiling if name == COMPILING else installed
                done = measure(argv, cwd=cwd, env=env)
                if done.returncode != 0:
                    sys.exit(f"`{' '.join(argv)}` exited {done.returncode}")
                if round_:  # the first round warms the file cache and writes the bytecode
                    times[name].append((done.wall * 1000, done.cpu * 1000))
    return {
        name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        for name, got in times.items()
    }


def targets(quick: bool) -> list[Target]:
    got = medians(7 if quick else 21)
    found = {name: wall for name, (wall, _) in got.items()}
    base = found["python -c pass"]
    extra = f"python -c pass {base:.1f} ms; python -m harness --version "
    extra += f"{found['python -m harness --version']:.1f} ms; {COMPILING} {found[COMPILING]:.0f} ms"
    one, sdk, agents = got[ONE_CASE], got[ONE_SDK_CASE], got[IMPORT_AGENTS]
    print(
        f"zeroclaw {ONE_CASE}: {one[0]:.0f} ms wall, {one[1]:.0f} ms CPU; "
        f"{ONE_SDK_CASE}: {sdk[0]:.0f} ms wall, {sdk[1]:.0f} ms CPU, against "
        f"{IMPORT_AGENTS} {agents[0]:.0f} ms wall ({sdk[0] - agents[0]:+.0f} ms)  "
        "(figures, no target of the issue: the serial part of every run, median)",
        flush=True,
    )
    return [
        Target(f"zeroclaw {name}", found[name], limit, "ms", how=f"wall, median; {extra}")
        for name, limit in LIMITS_MS.items()
    ]


def main() -> None:
    print_targets(__doc__, targets, quick_help="7 rounds instead of 21")


if __name__ == "__main__":
    main()
