"""The harness's own CPU per case, measured on the command as users run it.

    python benchmarks/per_case.py [--quick] [--rounds 3]

Two figures, each a marginal CPU cost per case: the CPU time of a command (the process and
every process it started, `measure.measure`) over a suite of N cases, less the same command
over a one-case suite, divided by N. Start-up, imports and a run's fixed costs cancel out;
what is left is what one more case costs.

* **Own cost per case, own loop** (target <= 0.06 ms, flat from 1k to 50k cases):
  `zeroclaw eval run --suite DIR --agent loop:factory --jobs 1` over N cases of the own-loop
  example (`measure.own_loop_suite`), its request snapshots taken once beforehand with
  `--update-snapshots` (as a user's suite has them), less a hand-written loop doing the same
  scripted work with no harness (`hand_written`: the fixtures read, each case's model
  answers popped in order, its echo and fail tools run, the messages kept as the example's
  loop keeps them), measured the same way. The harness's marginal CPU, the hand-written
  loop's and their difference (the own cost) are printed at 1k, 10k and 50k cases (quick:
  1k and 10k).
* **SDK path** (target <= 1.10): `zeroclaw eval run --agent openai-agents --jobs 1` over N
  of the regression suite's cases (snapshots taken once) against the bare SDK loop of
  `benchmarks/overhead.py` over the same fixtures, offered the same five tools the built-in
  agent offers, in a process of its own (the collector as the harness has it: paused while
  the fixtures are read, the heap frozen for the cases); the ratio of the two marginal CPU
  costs per case, over 3,000 cases (quick: 1,000) in five rounds.

Every size's sides run once per round, interleaved (the order flipping each round), and each
figure is the median of its per-round values, so drift in the machine's load hits both
sides alike. `benchmarks/overhead.py` is the bare SDK loop this module runs (its own `main`
prints this module's SDK figure); `benchmarks/instructions.py` counts the same SDK ratio in
instructions under valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import (
    OWN_LOOP,
    OWN_LOOP_AGENT,
    ROOT,
    Target,
    installed,
    measure,
    own_loop_suite,
    zeroclaw,
)

OWN_LIMIT_MS = 0.06
FLAT_LIMIT = 1.25  # the own cost at the largest size over that at the smallest
SDK_LIMIT = 1.10
# The SDK figure's cases (quick, full) and rounds. Each side's start-up (1.5-2 s of CPU: the
# SDK's imports) varies by a tenth of a second from run to run on shared cores, which the
# marginal cost divides by N: at 300 cases that alone moved the ratio by a tenth.
SDK_CASES = {True: 1000, False: 3000}
SDK_ROUNDS = 5
SDK_AGENT = "openai-agents"
REGRESSION = ROOT / "evals" / "regression"


def hand_written(directory: Path) -> int:
    """The scripted work of the own-loop example's cases with no harness: each fixture read,
    its model answers popped in order, its tools run, the conversation kept as the example's
    loop keeps it, and the final answer checked against the script. The number of cases."""
    done = 0
    for path in sorted(directory.glob("*.json")):
        fixture = json.loads(path.read_text("utf-8"))
        messages: list[dict[str, Any]] = [{"role": "system", "content": "..."}]
        for turn in fixture["turns"]:
            messages.append({"role": "user", "content": turn["user_input"]})
            answer = ""
            for step in turn["steps"]:
                response = step["response"]
                if response["type"] == "text":
                    answer = response["content"]
                    messages.append({"role": "assistant", "content": answer})
                    break
                calls = response["tool_calls"]
                messages.append({"role": "assistant", "tool_calls": calls})
                for call in calls:
                    arguments = json.loads(json.dumps(call["arguments"], sort_keys=True))
                    if call["name"] == "echo":
                        content = str(arguments.get("message", ""))
                    else:
                        content = "error: " + str(arguments.get("reason", ""))
                    messages.append(
                        {"role": "tool", "content": content, "tool_call_id": call["id"]}
                    )
            if not answer:
                raise SystemExit(f"{path}: a turn without a final answer")
        done += 1
    return done


def bare_sdk(directory: Path) -> int:
    """`benchmarks/overhead.py`'s bare SDK loop over the fixtures of `directory`, with the
    collector as the harness has it (`harness.runtime.collector`): paused while the SDK is
    imported and the fixtures read, the heap that leaves frozen while the cases run. Left
    on, the collector walks the SDK's whole import heap (~0.1 s of CPU) once or not at all
    in a run, depending on how many fixtures were read before it, which moved this side's
    per-case figure by a tenth at 300 cases; the harness never walks that heap."""
    gc.disable()
    from overhead import bare

    cases = [json.loads(p.read_text("utf-8")) for p in sorted(directory.glob("*.json"))]
    gc.freeze()
    gc.enable()
    return asyncio.run(bare(cases))


def _self(side: str, directory: Path) -> list[str]:
    return [sys.executable, __file__, f"--{side}", str(directory)]


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), str(OWN_LOOP), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path}


def _cpu(argv: Sequence[str], cwd: Path) -> float:
    done = measure(argv, cwd=cwd, env=_env())
    if done.returncode != 0:
        sys.exit(f"`{' '.join(argv)}` exited {done.returncode}:\n{done.stdout[-2000:]}")
    return done.cpu


def _run(directory: Path, agent: str) -> list[str]:
    return zeroclaw("eval", "run", "--suite", str(directory), "--agent", agent, "--jobs", "1")


def _snapshot(directory: Path, agent: str) -> None:
    """Take the suite's request snapshots once, before anything is measured."""
    argv = [*_run(directory, agent), "--update-snapshots"]
    subprocess.run(
        argv,
        cwd=OWN_LOOP,
        env={**os.environ, **installed(), **_env()},
        check=True,
        capture_output=True,
    )


@dataclass(frozen=True)
class Sides:
    """The commands compared at one size: each side's over N cases and over one."""

    n: int
    commands: dict[str, tuple[list[str], list[str]]]  # side -> (over n, over one)


def marginals(sizes: Sequence[Sides], rounds: int) -> list[dict[str, list[float]]]:
    """Per size, each side's marginal CPU per case (seconds), one value a round; the sides
    (and the one-case runs) interleaved, their order flipped every other round."""
    found: list[dict[str, list[float]]] = [{side: [] for side in s.commands} for s in sizes]
    for round_ in range(rounds):
        for at, size in enumerate(sizes):
            order = list(size.commands.items())
            if round_ % 2:
                order.reverse()
            for side, (over_n, over_one) in order:
                whole, one = _cpu(over_n, OWN_LOOP), _cpu(over_one, OWN_LOOP)
                found[at][side].append((whole - one) / size.n)
    return found


def own_loop_targets(tmp: Path, ns: Sequence[int], rounds: int) -> list[Target]:
    one = own_loop_suite(tmp / "own-1", 1)
    _snapshot(one, OWN_LOOP_AGENT)
    sizes = []
    for n in ns:
        suite = own_loop_suite(tmp / f"own-{n}", n)
        _snapshot(suite, OWN_LOOP_AGENT)
        commands = {
            "harness": (_run(suite, OWN_LOOP_AGENT), _run(one, OWN_LOOP_AGENT)),
            "hand-written": (_self("hand-written", suite), _self("hand-written", one)),
        }
        sizes.append(Sides(n, commands))
    found = marginals(sizes, rounds)
    targets, owns = [], []
    for size, sides in zip(sizes, found, strict=True):
        own = statistics.median(
            h - w for h, w in zip(sides["harness"], sides["hand-written"], strict=True)
        )
        owns.append(own)
        harness_ms = statistics.median(sides["harness"]) * 1e3
        hand_ms = statistics.median(sides["hand-written"]) * 1e3
        how = (
            f"harness {harness_ms:.3f} ms/case, hand-written loop {hand_ms:.3f} ms/case "
            f"({harness_ms / hand_ms:.0f}x); marginal CPU, median of {rounds} rounds"
        )
        targets.append(
            Target(
                f"own cost per case, own loop, {size.n} cases",
                own * 1e3,
                OWN_LIMIT_MS,
                "ms",
                how=how,
            )
        )
    if len(owns) > 1:
        flat = owns[-1] / owns[0] if owns[0] > 0 else float("inf")
        how = f"own cost at {ns[-1]} cases over that at {ns[0]}"
        targets.append(Target("own cost flat with suite size", flat, FLAT_LIMIT, "x", how=how))
    return targets


def regression_suite(directory: Path, n: int) -> Path:
    """`n` cases cycling over the regression suite's fixtures, under fresh ids."""
    directory.mkdir(parents=True, exist_ok=True)
    templates = [json.loads(p.read_text("utf-8")) for p in sorted(REGRESSION.glob("*.json"))]
    for k in range(n):
        fixture = dict(templates[k % len(templates)], id=f"case-{k:06d}")
        (directory / f"case_{k:06d}.json").write_text(json.dumps(fixture), "utf-8")
    return directory


def sdk_target(tmp: Path, n: int, rounds: int) -> Target:
    one, suite = regression_suite(tmp / "sdk-1", 1), regression_suite(tmp / "sdk-n", n)
    for directory in (one, suite):
        _snapshot(directory, SDK_AGENT)
    commands = {
        "harness": (_run(suite, SDK_AGENT), _run(one, SDK_AGENT)),
        "bare": (_self("bare-sdk", suite), _self("bare-sdk", one)),
    }
    [sides] = marginals([Sides(n, commands)], rounds)
    ratio = statistics.median(h / b for h, b in zip(sides["harness"], sides["bare"], strict=True))
    how = (
        f"harness {statistics.median(sides['harness']) * 1e3:.3f} ms/case, bare SDK loop "
        f"{statistics.median(sides['bare']) * 1e3:.3f} ms/case; {n} cases, marginal CPU, "
        f"median of {rounds} per-round ratios"
    )
    return Target("SDK path: harness / bare SDK loop", ratio, SDK_LIMIT, "x", how=how)


def targets(quick: bool, rounds: int | None = None) -> list[Target]:
    ns = (1000, 10_000) if quick else (1000, 10_000, 50_000)
    with tempfile.TemporaryDirectory(prefix="zeroclaw-per-case-") as tmp:
        found = own_loop_targets(Path(tmp), ns, rounds or (3 if quick else 5))
        # Five rounds unless told: quick or not, as the SDK figure's noise asks.
        found.append(sdk_target(Path(tmp), SDK_CASES[quick], rounds or SDK_ROUNDS))
    return found


_SIDES: dict[str, Callable[[Path], int]] = {"hand-written": hand_written, "bare-sdk": bare_sdk}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="1k and 10k cases, 3 rounds (SDK: 1k, 5 rounds)"
    )
    parser.add_argument("--rounds", type=int, help="rounds (default 3 quick, 5 full; SDK 5)")
    for side in _SIDES:
        parser.add_argument(f"--{side}", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for side, run in _SIDES.items():
        directory = getattr(args, side.replace("-", "_"))
        if directory is not None:
            run(directory)
            return
    for target in targets(args.quick, args.rounds):
        print(target.line(), flush=True)


if __name__ == "__main__":
    main()
