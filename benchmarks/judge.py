"""The cost of an LLM judge in replay: a judge-graded capability suite of 50 cases run from
recorded judge replies, against the same suite without rubrics.

    python benchmarks/judge.py [-n 50] [--rounds 5]

Both suites are the same N fixtures (one echo lookup, then an answer that states it; each
answer its own, so each case has its own recorded reply); the judged one adds the rubric
`states-tool-results` (with the transcript) to every case. The judge's replies are
recorded once, before timing, from the deterministic stand-in judge on loopback
(`examples/stand_in_judge/`), which is then stopped: every timed run of the judged suite
replays them offline, as `nox -s eval_capability` does. (No calibration is written: the
grades are diagnostic, which costs what gated grades cost; gating is decided once a rubric.)

Each side is `zeroclaw eval run` as CI runs it, a fresh process per run. Printed: time per
case of each side (wall clock, and CPU of the command's processes: `RUSAGE_CHILDREN`, so
the workers and the interpreter start-up are in), and the judged/plain ratios as the median
of per-round ratios over interleaved rounds (each side first in every other round), after a
warm-up run of each.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "stand_in_judge"))
# The example's stand-in judge, a script rather than a package of this repository.
stand_in_judge = importlib.import_module("stand_in_judge")

RUBRIC = {
    "name": "states-tool-results",
    "rubric": "The final response states what every successful tool call returned.",
    "threshold": 1.0,
    "include_transcript": True,
}
KEY_ENV = "ZEROCLAW_BENCH_JUDGE_KEY"
SUITE = "evals/capability"


def case(i: int, judged: bool) -> dict[str, Any]:
    result = f"order {1000 + i}: shipped"
    expects: dict[str, Any] = {"tools_used": ["echo"], "exact_tool_calls": 1}
    if judged:
        expects["judge"] = [RUBRIC]
    return {
        "model_name": f"judge-bench-{i:03d}",
        "turns": [
            {
                "user_input": f"Look up order {1000 + i} with echo ('{result}') and report it.",
                "steps": [
                    {"response": {"type": "tool_calls", "input_tokens": 90, "output_tokens": 18,
                                  "tool_calls": [{"id": "call_1", "name": "echo",
                                                  "arguments": {"message": result}}]}},
                    {"response": {"type": "text", "content": f"Order {1000 + i}: shipped.",
                                  "input_tokens": 130, "output_tokens": 8}},
                ],
            }
        ],
        "expects": expects,
    }  # fmt: skip


def project(where: Path, n: int, judge_url: str | None) -> Path:
    suite = where / SUITE
    suite.mkdir(parents=True)
    for i in range(n):
        data = case(i, judged=judge_url is not None)
        (suite / f"case_{i:03d}.json").write_text(json.dumps(data), "utf-8")
    lines = ['[project]\nname = "bench"\n', "[tool.zeroclaw.eval]", f'suite_dir = "{SUITE}"']
    if judge_url is not None:
        lines += [
            f'judge_base_url = "{judge_url}"',
            f'judge_model = "{stand_in_judge.MODEL}"',
            f'judge_api_key_env = "{KEY_ENV}"',
        ]
    (where / "pyproject.toml").write_text("\n".join(lines) + "\n", "utf-8")
    return where


def command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "harness", "eval", "run", "--suite-kind", "capability", *extra]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.pop(KEY_ENV, None)  # timed runs replay: no key, so no call could be made
    return env


def record(root: Path) -> None:
    """The judged suite's replies, asked of the stand-in judge once (then it stops)."""
    env = dict(environment(), **{KEY_ENV: "unused"})
    done = subprocess.run(
        command("--record-judge"), cwd=root, env=env, capture_output=True, text=True
    )
    if done.returncode != 0 or "recorded" not in done.stderr:
        sys.exit(f"recording the judge's replies failed:\n{done.stderr}{done.stdout}")


Timing = tuple[float, float]  # (wall seconds, CPU seconds of the command's processes)


def timed(root: Path, n: int) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command("--format", "json"), cwd=root, env=environment(), capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(done.stdout)
    passed = sum(1 for c in report["cases"] if c["passed"])
    if done.returncode != 0 or passed != n:
        sys.exit(f"{root}: {passed}/{n} cases passed:\n{done.stderr}")
    judged = [g for c in report["cases"] for g in c["grades"] if g["category"] == "judge"]
    if judged and not all(g["passed"] and not g["judge"]["live"] for g in judged):
        sys.exit(f"{root}: a judge grade did not pass from a recorded reply")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=50, help="number of cases (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default 5)")
    args = parser.parse_args()
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        server = stand_in_judge.serve(0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://{stand_in_judge.HOST}:{server.server_address[1]}/v1"
        judged = project(Path(tmp) / "judged", n, url)
        plain = project(Path(tmp) / "plain", n, None)
        record(judged)
        server.shutdown()
        server.server_close()
        timed(judged, n), timed(plain, n)  # warm-up: the file cache, compiled bytecode
        pairs: list[tuple[Timing, Timing]] = []
        for round_ in range(args.rounds):
            if round_ % 2:
                p = timed(plain, n)
                j = timed(judged, n)
            else:
                j = timed(judged, n)
                p = timed(plain, n)
            pairs.append((j, p))
    print(f"{n} cases, {args.rounds} interleaved rounds, `zeroclaw eval run` per run")
    for name, index in (("judged (replayed)", 0), ("without rubrics", 1)):
        walls = [pair[index][0] for pair in pairs]
        cpus = [pair[index][1] for pair in pairs]
        print(
            f"  {name:18} {statistics.median(walls) / n * 1000:7.2f} ms/case wall, "
            f"{statistics.median(cpus) / n * 1000:7.2f} ms/case CPU (median of rounds)"
        )
    wall_ratios = [j[0] / p[0] for j, p in pairs]
    cpu_ratios = [j[1] / p[1] for j, p in pairs]
    for what, ratios in (("wall", wall_ratios), ("CPU", cpu_ratios)):
        print(
            f"  judged/plain {what}: median {statistics.median(ratios):.3f} "
            f"(rounds {min(ratios):.3f} to {max(ratios):.3f})"
        )


if __name__ == "__main__":
    main()
